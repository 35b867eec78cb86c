//===- Progress.h - The live progress line of a DTLTO link ----------------===//
//
// On a terminal, a link of thousands of jobs should say how far it is: jobs
// done out of all, how many the distributor did and how many the linker
// compiled itself, how long it has run and about how long it has left. The
// line is redrawn in place on stderr while the backend runs and cleared when
// it is done, so that it never stays in the output. Where stderr is not a
// terminal (CI logs) it is off unless asked for (Options.h, progress()); then
// it prints a plain line now and then, and one at the end.
//
// It reads the link's record (LinkReport.h): it shows what the engine knows,
// which includes what the distributor reports on the event channel.
//
//===----------------------------------------------------------------------===//

#ifndef DTLTO_PROGRESS_H
#define DTLTO_PROGRESS_H

#include "dtlto/LinkReport.h"

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace dtlto {

/// The text of the progress line for C at time Now (no terminal codes).
std::string progressText(const ReportCounts &C, double Now);

class ProgressLine {
  std::thread Thread;
  std::mutex Mu;
  std::condition_variable Wake;
  bool Stopping = false;  // guarded by Mu
  bool Terminal = false;  // stderr is a terminal: redraw in place
  size_t Width = 80;      // the terminal's columns
  std::string Last;       // the last line printed (not on a terminal)
  double LastPrinted = 0; // when (not on a terminal)

  void run();
  void draw(bool Final);

public:
  ProgressLine() = default;
  ~ProgressLine() { stop(); }
  ProgressLine(const ProgressLine &) = delete;
  ProgressLine &operator=(const ProgressLine &) = delete;

  void start();
  /// Draws the final state once and clears the line (on a terminal), or
  /// prints the final line (elsewhere).
  void stop();
};

} // namespace dtlto

#endif
