//===- LinkReport.cpp - A record of one DTLTO link, for its report --------===//

#include "dtlto/LinkReport.h"
#include "dtlto/Events.h"
#include "dtlto/Manifest.h"
#include "dtlto/Options.h"
#include "dtlto/Progress.h"
#include "dtlto/ReportWriter.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/ManagedStatic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/raw_ostream.h"
#include <atomic>
#include <chrono>
#include <errno.h>
#include <mutex>

using namespace llvm;

namespace dtlto {

double wallSeconds() {
  return std::chrono::duration<double>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

namespace {

/// The record and what the report was asked for. One per process, made by
/// the first link that asks for a report or progress, never freed: the exit
/// hooks may run after other static objects are gone.
struct State {
  std::mutex Mu;
  LinkRecord Rec;                        // guarded by Mu
  std::map<uint64_t, unsigned> IdToTask; // event id -> task; guarded by Mu
  std::map<uint64_t, unsigned> Threads;  // thread id -> lane; guarded by Mu
  std::string ReportPath;                // FILE.html; empty: progress only
  bool Finished = false; // the report was written at exit; guarded by Mu
  bool Warned = false;   // guarded by Mu
  std::optional<ProgressLine> Progress;
};

// Taken when the engine is loaded: process start for the linker executables
// and for the preload library alike.
const double LoadTime = wallSeconds();
std::atomic<double> LTOStartTime{0}, LTOEndTime{0};
std::atomic<State *> Active{nullptr};

} // namespace

static State *active() { return Active.load(std::memory_order_acquire); }

// Writes the report once, at exit: the final link is done by then.
static void finishAtExit();

namespace {
/// LLD ends through lld::exitLld or InitLLVM's destructor, both of which call
/// llvm_shutdown, which destroys this; ld.bfd and ld.gold (LLVMgold.so) just
/// exit, which destroys AtExit. Whichever comes first writes the report.
struct ExitHook {
  ~ExitHook() { finishAtExit(); }
};
} // namespace
static ManagedStatic<ExitHook> AtShutdown;
static ExitHook AtExit;

template <typename Fn> static void withRecord(Fn F) {
  State *S = active();
  if (!S)
    return;
  std::lock_guard<std::mutex> Lock(S->Mu);
  F(*S);
}

static ReportJob &jobOf(State &S, const Job &J) {
  ReportJob &R = S.Rec.Jobs[J.Task];
  R.Task = J.Task;
  if (R.Module.empty())
    R.Module = J.ModuleID;
  return R;
}

Error LinkReport::begin(StringRef LinkerOutput, StringRef Distributor,
                        StringRef RemoteCompiler, bool Cache, size_t Tasks) {
  Expected<std::string> Path = reportFile();
  if (!Path)
    return Path.takeError();
  Expected<bool> WantProgress = progress();
  if (!WantProgress)
    return WantProgress.takeError();
  State *S = active();
  if (Path->empty() && !*WantProgress) {
    // A later link in the same process asks for nothing.
    if (S) {
      std::lock_guard<std::mutex> Lock(S->Mu);
      S->ReportPath.clear();
      S->Rec = LinkRecord();
    }
    return Error::success();
  }
  if (!S)
    S = new State;
  {
    std::lock_guard<std::mutex> Lock(S->Mu);
    LinkRecord &R = S->Rec;
    R = LinkRecord();
    S->IdToTask.clear();
    S->Threads.clear();
    S->Finished = false;
    S->ReportPath = *Path;
    R.Linker = program_invocation_short_name;
    R.Output = LinkerOutput.str();
    R.Distributor = Distributor.str();
    R.RemoteCompiler = RemoteCompiler.str();
    R.Cache = Cache;
    R.Tasks = Tasks;
    R.ProcessStart = LoadTime;
    if (double T = LTOStartTime.load())
      R.LTOStart = T;
    R.BackendStart = wallSeconds();
  }
  Active.store(S, std::memory_order_release);
  // Registers the hook with llvm_shutdown.
  (void)*AtShutdown;
  if (*WantProgress) {
    S->Progress.emplace();
    S->Progress->start();
  }
  return Error::success();
}

void LinkReport::jobPrepared(const Job &J, bool CacheHit) {
  double Now = wallSeconds();
  withRecord([&](State &S) {
    ReportJob &R = jobOf(S, J);
    R.CacheHit = CacheHit;
    R.Prepared = Now;
    R.InputBytes = J.InputBytes;
    R.Imports = J.ImportedFrom;
  });
}

void LinkReport::jobHandedOver(const Job &J, uint64_t Id) {
  double Now = wallSeconds();
  withRecord([&](State &S) {
    ReportJob &R = jobOf(S, J);
    R.HandedOver = Now;
    R.EventId = Id;
    S.IdToTask[Id] = J.Task;
  });
}

void LinkReport::distributorStarted(ArrayRef<const Job *> Jobs) {
  double Now = wallSeconds();
  withRecord([&](State &S) {
    S.Rec.DistributorStart = Now;
    for (size_t I = 0; I < Jobs.size(); ++I) {
      ReportJob &R = jobOf(S, *Jobs[I]);
      R.HandedOver = Now;
      R.EventId = I;
      S.IdToTask[I] = Jobs[I]->Task;
    }
  });
}

void LinkReport::distributorEnded(bool Failed) {
  double Now = wallSeconds();
  withRecord([&](State &S) {
    S.Rec.DistributorEnd = Now;
    S.Rec.DistributorFailed = Failed;
  });
}

// Which attempt an event is about. A numbered event: the attempt of that
// number, or the unnumbered one it continues (an "accepted" without a
// number, then "started" as attempt 1). Otherwise the last attempt while it
// runs, unless the event begins one the last is past (accepted or started
// after started); else a new one.
static ReportAttempt &attemptOf(ReportJob &R, const JobEvent &E) {
  ReportAttempt *Last = R.Attempts.empty() ? nullptr : &R.Attempts.back();
  bool Running = Last && Last->Result == ReportAttempt::Running;
  if (E.Attempt) {
    for (ReportAttempt &A : R.Attempts)
      if (A.Number == E.Attempt)
        return A;
    if (Running && !Last->Number) {
      Last->Number = E.Attempt;
      return *Last;
    }
    R.Attempts.emplace_back().Number = E.Attempt;
    return R.Attempts.back();
  }
  bool Opens = E.What == JobEvent::Accepted || E.What == JobEvent::Started;
  if (Running && !(Opens && Last->Started))
    return *Last;
  return R.Attempts.emplace_back();
}

void LinkReport::jobEvent(const JobEvent &E) {
  double Now = wallSeconds();
  withRecord([&](State &S) {
    auto Task = S.IdToTask.find(E.Id);
    if (Task == S.IdToTask.end()) {
      ++S.Rec.BadEvents;
      return;
    }
    ++S.Rec.Events;
    ReportJob &R = S.Rec.Jobs[Task->second];
    ReportAttempt &A = attemptOf(R, E);
    double T = E.Time.value_or(Now);
    if (!E.Worker.empty())
      A.Worker = E.Worker;
    auto Set = [](std::optional<double> &To, std::optional<double> From) {
      if (From)
        To = From;
    };
    Set(A.QueueSeconds, E.QueueSeconds);
    Set(A.UploadSeconds, E.UploadSeconds);
    Set(A.CompileSeconds, E.CompileSeconds);
    Set(A.DownloadSeconds, E.DownloadSeconds);
    switch (E.What) {
    case JobEvent::Accepted:
      A.Accepted = T;
      break;
    case JobEvent::Started:
      A.Started = T;
      break;
    case JobEvent::Done:
      A.Ended = T;
      A.Result = ReportAttempt::Done;
      break;
    case JobEvent::Failed:
      A.Ended = T;
      A.Result = ReportAttempt::Failed;
      A.Reason = E.Reason;
      A.Retry = E.Retry;
      break;
    case JobEvent::Cancelled:
      A.Ended = T;
      A.Result = ReportAttempt::Cancelled;
      break;
    }
  });
}

void LinkReport::badEvent() {
  withRecord([](State &S) { ++S.Rec.BadEvents; });
}

void LinkReport::objectLinked(const Job &J, uint64_t Bytes, ReportSource From) {
  if (!active())
    return;
  double Now = wallSeconds();
  // When the object was written, as its file says (a distributor that
  // reports nothing tells no more): only the distributor's objects are
  // files; the linker's own are in memory, a cache hit is the cache's file.
  std::optional<double> Written;
  sys::fs::file_status Status;
  if (From == ReportSource::Distributor &&
      !sys::fs::status(J.ObjectPath, Status))
    Written = std::chrono::duration<double>(
                  Status.getLastModificationTime().time_since_epoch())
                  .count();
  withRecord([&](State &S) {
    ReportJob &R = jobOf(S, J);
    R.Linked = Now;
    R.ObjectBytes = Bytes;
    R.From = From;
    // A copy that kept a remote file's time, or another machine's clock,
    // says nothing about this link.
    if (Written && R.HandedOver && *Written >= *R.HandedOver && *Written <= Now)
      R.ObjectWritten = Written;
  });
}

void LinkReport::cancelSent(const Job &J) {
  double Now = wallSeconds();
  withRecord([&](State &S) {
    ReportJob &R = jobOf(S, J);
    if (!R.CancelSent)
      R.CancelSent = Now;
  });
}

void LinkReport::fellBack(const Job &J, StringRef Reason) {
  withRecord([&](State &S) { jobOf(S, J).FallbackReason = Reason.str(); });
}

void LinkReport::jobFailed(const Job &J, StringRef Failure) {
  withRecord([&](State &S) {
    ReportJob &R = jobOf(S, J);
    if (R.Failure.empty())
      R.Failure = Failure.str();
  });
}

LinkReport::LocalCompile::LocalCompile(const Job &J, ReportSource Kind)
    : Task(J.Task), Recording(active() != nullptr) {
  if (!Recording)
    return;
  double Now = wallSeconds();
  uint64_t Thread = get_threadid();
  withRecord([&](State &S) {
    ReportJob &R = jobOf(S, J);
    R.LocalStart = Now;
    R.LocalKind = Kind;
    auto It = S.Threads.try_emplace(Thread, S.Threads.size()).first;
    R.LocalThread = It->second;
  });
}

LinkReport::LocalCompile::~LocalCompile() {
  if (!Recording)
    return;
  double Now = wallSeconds();
  withRecord([&](State &S) { S.Rec.Jobs[Task].LocalEnd = Now; });
}

// Writes the report files, or says once why it cannot.
static void write(State &S, const LinkRecord &Rec) {
  if (S.ReportPath.empty())
    return;
  Error E = writeReport(Rec, S.ReportPath);
  if (!E)
    return;
  std::string Msg = toString(std::move(E));
  std::lock_guard<std::mutex> Lock(S.Mu);
  if (S.Warned)
    return;
  S.Warned = true;
  // Not through the linker's diagnostics: --fatal-warnings must not fail a
  // link over its report.
  errs() << S.Rec.Linker << ": warning: " << Msg << "\n";
}

void LinkReport::backendEnded(bool Failed) {
  State *S = active();
  if (!S)
    return;
  if (S->Progress) {
    S->Progress->stop();
    S->Progress.reset();
  }
  LinkRecord Rec;
  {
    std::lock_guard<std::mutex> Lock(S->Mu);
    S->Rec.BackendEnd = wallSeconds();
    S->Rec.BackendFailed = Failed;
    Rec = S->Rec;
  }
  // Once now, for linkers that exit without running the exit hooks; the
  // report written at exit replaces it.
  write(*S, Rec);
}

void LinkReport::ltoStarted() { LTOStartTime.store(wallSeconds()); }

void LinkReport::ltoEnded() {
  double Now = wallSeconds();
  LTOEndTime.store(Now);
  withRecord([&](State &S) {
    if (S.Rec.BackendEnd)
      S.Rec.LTOEnd = Now;
  });
}

void LinkReport::timeTraceWritten(StringRef Path) {
  withRecord([&](State &S) {
    if (S.Rec.BackendEnd)
      S.Rec.TimeTraceFile = Path.str();
  });
}

static void finishAtExit() {
  State *S = active();
  if (!S)
    return;
  LinkRecord Rec;
  {
    std::lock_guard<std::mutex> Lock(S->Mu);
    // Only a link whose backend finished; and only once.
    if (S->Finished || !S->Rec.BackendEnd)
      return;
    S->Finished = true;
    S->Rec.LinkEnd = wallSeconds();
    Rec = S->Rec;
  }
  write(*S, Rec);
}

std::optional<LinkRecord> LinkReport::snapshot() {
  std::optional<LinkRecord> Copy;
  withRecord([&](State &S) { Copy = S.Rec; });
  return Copy;
}

std::optional<ReportCounts> LinkReport::counts() {
  std::optional<ReportCounts> C;
  withRecord([&](State &S) {
    ReportCounts &N = C.emplace();
    const LinkRecord &R = S.Rec;
    N.Total = R.Tasks;
    N.Start = R.BackendStart.value_or(R.ProcessStart);
    N.DistributorStart = R.DistributorStart;
    N.DistributorRunning = R.DistributorStart && !R.DistributorEnd;
    for (const auto &[Task, J] : R.Jobs) {
      if (J.Prepared)
        ++N.Prepared;
      if (!J.Failure.empty())
        ++N.Failed;
      else if (J.From == ReportSource::Cache)
        ++N.Cached;
      else if (J.From == ReportSource::Distributor)
        ++N.Distributed;
      else if (J.From != ReportSource::None)
        ++N.Local;
      else if ((J.LocalStart && !J.LocalEnd) ||
               (!J.Attempts.empty() && J.Attempts.back().Started &&
                J.Attempts.back().Result == ReportAttempt::Running))
        ++N.Running;
    }
  });
  return C;
}

} // namespace dtlto
