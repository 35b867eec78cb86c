//===- Progress.cpp - The live progress line of a DTLTO link --------------===//

#include "dtlto/Progress.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"
#include <chrono>
#include <cstdlib>
#include <sys/ioctl.h>
#include <unistd.h>

using namespace llvm;

namespace dtlto {

static std::string seconds(double S) {
  if (S < 10)
    return formatv("{0:f1} s", S).str();
  if (S < 120)
    return formatv("{0:f0} s", S).str();
  return formatv("{0}m{1:d2}s", unsigned(S) / 60, unsigned(S) % 60).str();
}

std::string progressText(const ReportCounts &C, double Now) {
  std::string Out;
  raw_string_ostream OS(Out);
  size_t Done = C.Cached + C.Distributed + C.Local;
  OS << "dtlto: ";
  if (!C.DistributorStart && Done < C.Total) {
    OS << "preparing jobs " << C.Prepared << "/" << C.Total;
  } else {
    OS << Done << "/" << C.Total << " jobs done (";
    if (C.Cached)
      OS << C.Cached << " cached, ";
    OS << C.Distributed << " by the distributor, " << C.Local
       << " in the linker)";
    if (C.Running)
      OS << ", " << C.Running << " running";
    if (C.Failed)
      OS << ", " << C.Failed << " failed";
  }
  OS << "; " << seconds(Now - C.Start);
  // The distributor's pace so far, for what it still has.
  if (C.DistributorRunning && C.Distributed && Done < C.Total) {
    double Pace = (Now - *C.DistributorStart) / C.Distributed;
    OS << ", about " << seconds(Pace * (C.Total - Done)) << " left";
  }
  return Out;
}

static void writeAll(StringRef S) {
  while (!S.empty()) {
    ssize_t N = ::write(STDERR_FILENO, S.data(), S.size());
    if (N <= 0) {
      if (N < 0 && errno == EINTR)
        continue;
      return;
    }
    S = S.drop_front(N);
  }
}

void ProgressLine::draw(bool Final) {
  std::optional<ReportCounts> C = LinkReport::counts();
  if (!C)
    return;
  double Now = wallSeconds();
  std::string Text = progressText(*C, Now);
  if (Terminal) {
    if (Text.size() >= Width)
      Text.resize(Width ? Width - 1 : 0);
    // Back to the start of the line, the text, and erase the rest.
    writeAll("\r" + Text + "\x1b[K");
    if (Final)
      writeAll("\r\x1b[K");
    return;
  }
  // A log gets a line when something changed, at most every few seconds,
  // and the last one.
  std::string Counts = Text.substr(0, Text.rfind(';'));
  if (Final || (Counts != Last && Now - LastPrinted >= 5)) {
    writeAll(Text + "\n");
    Last = Counts;
    LastPrinted = Now;
  }
}

void ProgressLine::run() {
  std::unique_lock<std::mutex> Lock(Mu);
  auto Period = std::chrono::milliseconds(Terminal ? 200 : 1000);
  while (!Wake.wait_for(Lock, Period, [&] { return Stopping; })) {
    Lock.unlock();
    draw(/*Final=*/false);
    Lock.lock();
  }
}

void ProgressLine::start() {
  Terminal = sys::Process::StandardErrIsDisplayed();
  struct winsize WS;
  if (Terminal && !ioctl(STDERR_FILENO, TIOCGWINSZ, &WS) && WS.ws_col)
    Width = WS.ws_col;
  // The distributor inherits the terminal: ours is the line that counts
  // every job, so ours tells it to keep its own live line off.
  if (Terminal)
    setenv("DTLTO_ENGINE_PROGRESS", "1", /*overwrite=*/1);
  LastPrinted = wallSeconds();
  Thread = std::thread([this] { run(); });
}

void ProgressLine::stop() {
  if (!Thread.joinable())
    return;
  {
    std::lock_guard<std::mutex> Lock(Mu);
    Stopping = true;
  }
  Wake.notify_all();
  Thread.join();
  draw(/*Final=*/true);
  if (Terminal)
    unsetenv("DTLTO_ENGINE_PROGRESS");
}

} // namespace dtlto
