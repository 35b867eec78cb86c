//===- ReportWriter.cpp - The link report's trace and page ----------------===//
//
// One pass from the record to views of it (a span and a lane for each
// attempt, the phases, the critical path, the totals, the bound), then the
// trace written from those views. Times in the trace are microseconds since
// the engine was loaded (the linker's start), as the trace format wants; the
// args give seconds.
//
//===----------------------------------------------------------------------===//

#include "dtlto/ReportWriter.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include <cmath>

using namespace llvm;

namespace dtlto {

// The page, with "@DTLTO_TRACE@" where the trace goes (CMake makes this from
// ReportPage.html).
static const char PageTemplate[] =
#include "ReportPage.inc"
    ;

namespace {

struct Span {
  double Start = 0, End = 0;
  double length() const { return End - Start; }
};

/// One attempt at a job, placed on a lane of the distributor.
struct AttemptView {
  unsigned Task = 0;
  const ReportAttempt *Reported = nullptr; // null: only the engine saw it
  std::string Worker;
  Span When;
  ReportAttempt::Outcome Result = ReportAttempt::Running;
  std::string Reason;
  unsigned Lane = 0; // thread id in the distributor's process
};

struct JobView {
  const ReportJob *J = nullptr;
  StringRef Outcome; // cache, distributor, local, fallback, failed, unfinished
  std::optional<Span> Main; // the span that made the object the link got
  int Pid = 0, Tid = 0;     // where Main is drawn
  std::vector<size_t> Attempts;
  double RunSeconds = 0; // what the job itself took, for the bound
  std::optional<double> Queue, Upload, Compile, Download;
  std::string Worker;
  bool Critical = false;
};

struct Phase {
  std::string Name;
  Span When;
  bool Critical = false;
};

struct Totals {
  size_t Jobs = 0, CacheHits = 0, Distributed = 0, FromDistributor = 0,
         Fallbacks = 0, Failed = 0, Retries = 0, LocalSlot = 0, Hedged = 0,
         HedgesWon = 0, Cancelled = 0;
  uint64_t InputBytes = 0, ObjectBytes = 0;
  double LinkSeconds = 0, BackendSeconds = 0, DistributorSeconds = 0,
         FarmSeconds = 0, LocalSeconds = 0;
};

/// Lane numbers in the trace.
constexpr int LinkerPid = 1, DistributorPid = 2, TimeTracePid = 3;
constexpr int PhaseTid = 1, CacheTid = 2, DistributorProcessTid = 3,
              NotRunTid = 4, FirstLocalTid = 10;

struct Analysis {
  const LinkRecord &Rec;
  double T0 = 0, End = 0;
  bool Complete = false;
  std::vector<JobView> Jobs;
  std::vector<AttemptView> Attempts;
  std::vector<std::string> Lanes; // distributor lanes, tid 1.. in order
  unsigned LocalLanes = 0;
  std::vector<Phase> Phases;
  std::vector<Phase> CriticalPath;
  JobView *CriticalJob = nullptr;
  Totals Sum;
  double BeforeJobs = 0, LongestJob = 0, AfterJobs = 0;
  const JobView *Longest = nullptr;

  explicit Analysis(const LinkRecord &Rec) : Rec(Rec) {}
};

} // namespace

static double orElse(const std::optional<double> &V, double D) {
  return V ? *V : D;
}

static bool linkerRan(ReportSource S) {
  return S == ReportSource::LocalSlot || S == ReportSource::Hedge ||
         S == ReportSource::Fallback;
}

// When the distributor's part of a job ended, as well as it is known.
static double attemptEnd(const ReportJob &J, const LinkRecord &R, double End) {
  if (J.ObjectWritten)
    return *J.ObjectWritten;
  if (J.Linked && J.From == ReportSource::Distributor)
    return *J.Linked;
  if (J.CancelSent)
    return *J.CancelSent;
  return orElse(R.DistributorEnd, End);
}

static void addAttempts(Analysis &A, JobView &V) {
  const ReportJob &J = *V.J;
  const LinkRecord &R = A.Rec;
  double HandedOver = orElse(J.HandedOver, orElse(R.DistributorStart, A.End));
  if (J.Attempts.empty()) {
    // What the engine saw: handed over, then an object or not.
    AttemptView AV;
    AV.Task = J.Task;
    AV.When = {HandedOver, std::max(HandedOver, attemptEnd(J, R, A.End))};
    bool Got = J.From == ReportSource::Distributor;
    AV.Result = Got            ? ReportAttempt::Done
                : J.CancelSent ? ReportAttempt::Cancelled
                : (J.FallbackReason.empty() && J.Failure.empty())
                    ? ReportAttempt::Running
                    : ReportAttempt::Failed;
    if (!Got && !J.CancelSent)
      AV.Reason = !J.FallbackReason.empty() ? J.FallbackReason : J.Failure;
    V.Attempts.push_back(A.Attempts.size());
    A.Attempts.push_back(std::move(AV));
    return;
  }
  for (size_t I = 0; I < J.Attempts.size(); ++I) {
    const ReportAttempt &RA = J.Attempts[I];
    AttemptView AV;
    AV.Task = J.Task;
    AV.Reported = &RA;
    AV.Worker = RA.Worker;
    // An attempt that never started (refused, lost in a queue) shows where
    // it ended.
    double Start = RA.Started ? *RA.Started
                   : RA.Ended ? *RA.Ended
                              : orElse(RA.Accepted, HandedOver);
    double Stop = RA.Ended                     ? *RA.Ended
                  : I + 1 == J.Attempts.size() ? attemptEnd(J, R, A.End)
                                               : Start;
    AV.When = {Start, std::max(Start, Stop)};
    AV.Result = RA.Result;
    // Done, but the linker's own copy was linked.
    if (RA.Result == ReportAttempt::Done && linkerRan(J.From))
      AV.Result = ReportAttempt::Lost;
    AV.Reason = RA.Reason;
    V.Attempts.push_back(A.Attempts.size());
    A.Attempts.push_back(std::move(AV));
  }
}

// Attempts on one worker that overlap (a worker string naming a host that
// runs several jobs at once) go to lanes of their own: events on one lane of
// a trace must not overlap.
static void assignLanes(Analysis &A) {
  std::vector<size_t> Order(A.Attempts.size());
  for (size_t I = 0; I < Order.size(); ++I)
    Order[I] = I;
  // Reported workers in natural order (node2 before node10), then what was
  // not reported; each by start.
  llvm::stable_sort(Order, [&](size_t L, size_t R) {
    const AttemptView &X = A.Attempts[L], &Y = A.Attempts[R];
    if (X.Worker.empty() != Y.Worker.empty())
      return Y.Worker.empty();
    if (X.Worker != Y.Worker)
      return StringRef(X.Worker).compare_numeric(Y.Worker) < 0;
    return X.When.Start < Y.When.Start;
  });
  std::string Group;
  std::vector<std::pair<double, unsigned>> Free; // lane end, lane
  bool First = true;
  for (size_t I : Order) {
    AttemptView &AV = A.Attempts[I];
    if (First || AV.Worker != Group) {
      Group = AV.Worker;
      Free.clear();
      First = false;
    }
    auto Lane = find_if(Free, [&](const std::pair<double, unsigned> &F) {
      return F.first <= AV.When.Start;
    });
    if (Lane == Free.end()) {
      std::string Name = Group.empty() ? "not reported" : Group;
      if (!Free.empty())
        Name += " #" + std::to_string(Free.size() + 1);
      A.Lanes.push_back(Name);
      Free.push_back({AV.When.End, unsigned(A.Lanes.size())});
      Lane = Free.end() - 1;
    }
    Lane->first = AV.When.End;
    AV.Lane = Lane->second;
  }
}

static void viewJobs(Analysis &A) {
  const LinkRecord &R = A.Rec;
  for (const auto &[Task, J] : R.Jobs) {
    JobView &V = A.Jobs.emplace_back();
    V.J = &J;
    if (J.HandedOver)
      addAttempts(A, V);
    if (!J.Attempts.empty()) {
      const ReportAttempt &Last = J.Attempts.back();
      V.Worker = Last.Worker;
      V.Queue = Last.QueueSeconds;
      V.Upload = Last.UploadSeconds;
      V.Compile = Last.CompileSeconds;
      V.Download = Last.DownloadSeconds;
      if (!V.Queue && Last.Started && J.HandedOver)
        V.Queue = std::max(0.0, *Last.Started - *J.HandedOver);
    }
    if (J.CacheHit) {
      V.Outcome = "cache";
      double T = orElse(J.Prepared, orElse(J.Linked, A.End));
      V.Main = Span{T, T};
      V.Pid = LinkerPid;
      V.Tid = CacheTid;
    } else if (J.LocalStart && J.From != ReportSource::Distributor) {
      // What the distributor said was about an attempt that did not count.
      V.Queue = V.Upload = V.Compile = V.Download = std::nullopt;
      V.Worker = "linker thread " + std::to_string(J.LocalThread + 1);
      V.Outcome = !J.Failure.empty()                      ? "failed"
                  : J.LocalKind == ReportSource::Fallback ? "fallback"
                  : J.From != ReportSource::None          ? "local"
                                                          : "unfinished";
      V.Main = Span{*J.LocalStart, orElse(J.LocalEnd, A.End)};
      V.Pid = LinkerPid;
      V.Tid = FirstLocalTid + J.LocalThread;
      A.LocalLanes = std::max(A.LocalLanes, J.LocalThread + 1);
    } else {
      V.Outcome = !J.Failure.empty()                    ? "failed"
                  : J.From == ReportSource::Distributor ? "distributor"
                  : !J.FallbackReason.empty()           ? "fallback"
                                                        : "unfinished";
      // A hedged copy the linker ran, which lost: on its thread's lane.
      if (J.LocalStart)
        A.LocalLanes = std::max(A.LocalLanes, J.LocalThread + 1);
    }
  }
  assignLanes(A);
  for (JobView &V : A.Jobs) {
    if (V.Main)
      continue;
    if (V.Attempts.empty()) {
      // Failed before it could run: shown where it failed.
      double T = orElse(V.J->Prepared, orElse(R.BackendStart, A.End));
      V.Main = Span{T, T};
      V.Pid = LinkerPid;
      V.Tid = NotRunTid;
      continue;
    }
    const AttemptView &Last = A.Attempts[V.Attempts.back()];
    V.Main = Last.When;
    V.Pid = DistributorPid;
    V.Tid = Last.Lane;
  }
  for (JobView &V : A.Jobs) {
    if (V.Compile)
      V.RunSeconds = *V.Compile + V.Upload.value_or(0) + V.Download.value_or(0);
    else if (V.Main)
      V.RunSeconds = V.Main->length();
  }
}

static void addPhase(Analysis &A, StringRef Name, std::optional<double> Start,
                     std::optional<double> End) {
  if (!Start || !End)
    return;
  double From = *Start;
  if (!A.Phases.empty())
    From = std::max(From, A.Phases.back().When.End);
  if (*End <= From)
    return;
  A.Phases.push_back({Name.str(), {From, *End}, false});
}

static void viewPhases(Analysis &A) {
  const LinkRecord &R = A.Rec;
  std::optional<double> LastPrepared, FirstLocal, LastLocal, LastLinked;
  auto Max = [](std::optional<double> &To, std::optional<double> V) {
    if (V && (!To || *V > *To))
      To = V;
  };
  auto Min = [](std::optional<double> &To, std::optional<double> V) {
    if (V && (!To || *V < *To))
      To = V;
  };
  for (const auto &[Task, J] : R.Jobs) {
    Max(LastPrepared, J.Prepared);
    Min(FirstLocal, J.LocalStart);
    Max(LastLocal, J.LocalEnd);
    if (!J.CacheHit)
      Max(LastLinked, J.Linked);
  }
  std::optional<double> Start = A.T0;
  addPhase(A, "Read inputs and resolve symbols", Start, R.LTOStart);
  addPhase(A, "Regular LTO and thin link", R.LTOStart ? R.LTOStart : Start,
           R.BackendStart);
  addPhase(A, "Cache lookups and index shards", R.BackendStart, LastPrepared);
  addPhase(A, "Input copies and manifest", LastPrepared, R.DistributorStart);
  // The main thread waits while the distributor runs (its process has a
  // lane of its own); objects it reports done are linked meanwhile. A
  // streaming distributor starts while shards are still being written.
  addPhase(A, "Wait for the jobs (objects linked as they come)",
           R.DistributorStart, R.DistributorEnd);
  addPhase(A, "Check and add objects", R.DistributorEnd, LastLinked);
  addPhase(A, "Compile in the linker", FirstLocal, LastLocal);
  addPhase(A, "Clean up", R.BackendStart, R.BackendEnd);
  addPhase(A, "Finish LTO", R.BackendEnd, R.LTOEnd);
  addPhase(A,
           R.BackendFailed ? "Until the linker exited (the link failed)"
                           : "Final link",
           R.LTOEnd ? R.LTOEnd : R.BackendEnd, R.LinkEnd);
}

// The critical path: the linker's own work up to the job that finished
// last, that job (its wait, then its run), and the linker's work after it.
// With unlimited workers, that job would still have to run; everything else
// could have overlapped it.
static void viewCriticalPath(Analysis &A) {
  const LinkRecord &R = A.Rec;
  for (JobView &V : A.Jobs)
    if (V.Main && V.Outcome != "cache" &&
        (!A.CriticalJob || V.Main->End > A.CriticalJob->Main->End))
      A.CriticalJob = &V;
  auto Add = [&](StringRef Name, double From, double To) {
    if (To > From)
      A.CriticalPath.push_back({Name.str(), {From, To}, true});
  };
  if (!A.CriticalJob) {
    for (Phase &P : A.Phases)
      P.Critical = true;
    Add("the link, served whole by the cache", A.T0, A.End);
    return;
  }
  JobView &C = *A.CriticalJob;
  C.Critical = true;
  const ReportJob &J = *C.J;
  double Out = orElse(J.HandedOver, C.Main->Start);
  double BackendEnd = orElse(R.BackendEnd, A.End);
  Add("before the jobs (inputs, thin link)", A.T0, orElse(R.BackendStart, Out));
  Add(J.HandedOver || !J.LocalStart ? "until the job went to the distributor"
                                    : "until a local slot took the job",
      orElse(R.BackendStart, Out), Out);
  bool Hedged = J.LocalKind == ReportSource::Hedge;
  if (C.Outcome == "local") {
    Add(Hedged ? "the distributor's copy, until the linker hedged it"
               : "the distributor, until a local slot took the job",
        Out, C.Main->Start);
    Add(Hedged ? "the hedged copy, compiled in the linker"
               : "compiled in a local slot",
        C.Main->Start, C.Main->End);
  } else if (C.Outcome == "fallback" ||
             (C.Outcome == "failed" && J.LocalStart)) {
    Add("the distributor, without the object", Out, C.Main->Start);
    Add("compiled in the linker", C.Main->Start, C.Main->End);
  } else {
    Add("waiting for a worker", Out, C.Main->Start);
    Add("the job", C.Main->Start, C.Main->End);
  }
  Add("after the job (checks, clean-up)", C.Main->End, BackendEnd);
  if (R.LinkEnd)
    Add(R.BackendFailed ? "until the linker exited" : "final link", BackendEnd,
        *R.LinkEnd);
  // The main thread's phases before the job went out and after it came
  // back; when the linker compiled it, every one of them.
  bool Local = C.Pid == LinkerPid;
  for (Phase &P : A.Phases)
    P.Critical =
        Local || P.When.End <= Out + 1e-9 || P.When.Start >= C.Main->End - 1e-9;
}

static void viewTotals(Analysis &A) {
  const LinkRecord &R = A.Rec;
  Totals &T = A.Sum;
  for (const JobView &V : A.Jobs) {
    const ReportJob &J = *V.J;
    ++T.Jobs;
    T.CacheHits += J.CacheHit;
    if (J.HandedOver) {
      ++T.Distributed;
      T.InputBytes += J.InputBytes;
    }
    if (V.Outcome == "distributor") {
      ++T.FromDistributor;
      T.ObjectBytes += J.ObjectBytes;
    }
    T.Fallbacks += !J.FallbackReason.empty();
    T.LocalSlot += V.Outcome == "local";
    T.Hedged += J.LocalKind == ReportSource::Hedge;
    T.HedgesWon += J.LocalKind == ReportSource::Hedge && J.From == J.LocalKind;
    T.Cancelled += J.CancelSent.has_value();
    T.Failed += V.Outcome == "failed";
    for (const ReportAttempt &RA : J.Attempts)
      T.Retries += RA.Result == ReportAttempt::Failed && RA.Retry;
    if (J.LocalStart)
      T.LocalSeconds += orElse(J.LocalEnd, A.End) - *J.LocalStart;
    if (V.Outcome != "cache" && (!A.Longest || V.RunSeconds > A.LongestJob)) {
      A.Longest = &V;
      A.LongestJob = V.RunSeconds;
    }
  }
  for (const AttemptView &AV : A.Attempts)
    T.FarmSeconds += AV.Reported && AV.Reported->CompileSeconds
                         ? *AV.Reported->CompileSeconds
                         : AV.When.length();
  T.LinkSeconds = A.End - A.T0;
  if (R.BackendStart)
    T.BackendSeconds = orElse(R.BackendEnd, A.End) - *R.BackendStart;
  if (R.DistributorStart)
    T.DistributorSeconds =
        orElse(R.DistributorEnd, A.End) - *R.DistributorStart;
  A.BeforeJobs = orElse(R.BackendStart, A.T0) - A.T0;
  A.AfterJobs = R.LinkEnd ? *R.LinkEnd - orElse(R.BackendEnd, *R.LinkEnd) : 0;
}

static Analysis analyse(const LinkRecord &R) {
  Analysis A(R);
  A.T0 = R.ProcessStart;
  A.Complete = R.LinkEnd.has_value();
  A.End = R.LinkEnd ? *R.LinkEnd : R.BackendEnd ? *R.BackendEnd : wallSeconds();
  viewJobs(A);
  viewPhases(A);
  viewCriticalPath(A);
  viewTotals(A);
  return A;
}

//===-- Writing
//------------------------------------------------------------===//

namespace {
class TraceWriter {
  json::OStream J;
  double T0;

public:
  TraceWriter(raw_ostream &OS, double T0) : J(OS), T0(T0) {}
  json::OStream &out() { return J; }

  void seconds(StringRef Key, double S) {
    J.attributeBegin(Key);
    J.rawValue([&](raw_ostream &OS) {
      // Microseconds: enough, and short.
      std::string Text = formatv("{0:f6}", S).str();
      StringRef T(Text);
      T = T.rtrim('0');
      if (T.ends_with("."))
        T = T.drop_back();
      OS << (T.empty() || T == "-" ? "0" : T);
    });
    J.attributeEnd();
  }
  void at(StringRef Key, std::optional<double> T) {
    if (T)
      seconds(Key, *T - T0);
  }
  int64_t micros(double T) const { return std::llround((T - T0) * 1e6); }

  void metadata(int Pid, std::optional<int> Tid, StringRef What,
                const json::Value &Arg) {
    J.object([&] {
      J.attribute("name", What);
      J.attribute("ph", "M");
      J.attribute("pid", Pid);
      if (Tid)
        J.attribute("tid", *Tid);
      J.attributeObject("args", [&] {
        J.attribute(What.ends_with("sort_index") ? "sort_index" : "name", Arg);
      });
    });
  }
  void lane(int Pid, int Tid, StringRef Name) {
    metadata(Pid, Tid, "thread_name", Name);
    metadata(Pid, Tid, "thread_sort_index", Tid);
  }

  template <typename ArgsFn>
  void complete(StringRef Name, StringRef Cat, int Pid, int Tid, Span S,
                ArgsFn Args) {
    J.object([&] {
      J.attribute("name", Name);
      J.attribute("cat", Cat);
      J.attribute("ph", "X");
      J.attribute("pid", Pid);
      J.attribute("tid", Tid);
      J.attribute("ts", micros(S.Start));
      J.attribute("dur", std::max<int64_t>(0, micros(S.End) - micros(S.Start)));
      J.attributeObject("args", Args);
    });
  }
};
} // namespace

static StringRef outcomeName(ReportAttempt::Outcome O) {
  switch (O) {
  case ReportAttempt::Running:
    return "unfinished";
  case ReportAttempt::Done:
    return "done";
  case ReportAttempt::Failed:
    return "failed";
  case ReportAttempt::Cancelled:
    return "cancelled";
  case ReportAttempt::Lost:
    return "lost";
  }
  return "unfinished";
}

// LLD's --time-trace scopes, moved onto our clock: its file gives the
// microseconds since the epoch at which its trace began.
static void writeTimeTrace(TraceWriter &W, const LinkRecord &R) {
  if (R.TimeTraceFile.empty())
    return;
  ErrorOr<std::unique_ptr<MemoryBuffer>> Buf =
      MemoryBuffer::getFile(R.TimeTraceFile);
  if (!Buf)
    return;
  Expected<json::Value> V = json::parse((*Buf)->getBuffer());
  if (!V) {
    consumeError(V.takeError());
    return;
  }
  const json::Object *Top = V->getAsObject();
  const json::Array *Events = Top ? Top->getArray("traceEvents") : nullptr;
  std::optional<double> Begin =
      Top ? Top->getNumber("beginningOfTime") : std::nullopt;
  if (!Events || !Begin)
    return;
  json::OStream &J = W.out();
  W.metadata(TimeTracePid, std::nullopt, "process_name", "LLD --time-trace");
  W.metadata(TimeTracePid, std::nullopt, "process_sort_index", TimeTracePid);
  double Offset = *Begin - R.ProcessStart * 1e6;
  for (const json::Value &E : *Events) {
    const json::Object *O = E.getAsObject();
    if (!O)
      continue;
    std::optional<StringRef> Ph = O->getString("ph");
    std::optional<StringRef> Name = O->getString("name");
    std::optional<int64_t> Tid = O->getInteger("tid");
    if (!Ph || !Name || !Tid)
      continue;
    if (*Ph == "M" && *Name == "thread_name") {
      const json::Object *Args = O->getObject("args");
      if (std::optional<StringRef> N =
              Args ? Args->getString("name") : std::nullopt)
        W.lane(TimeTracePid, *Tid, *N);
      continue;
    }
    std::optional<double> Ts = O->getNumber("ts"), Dur = O->getNumber("dur");
    // The per-name totals LLVM appends are not spans of time.
    if (*Ph != "X" || !Ts || !Dur || Name->starts_with("Total "))
      continue;
    J.object([&] {
      J.attribute("name", *Name);
      J.attribute("cat", "time-trace");
      J.attribute("ph", "X");
      J.attribute("pid", TimeTracePid);
      J.attribute("tid", *Tid);
      J.attribute("ts", std::llround(*Ts + Offset));
      J.attribute("dur", std::llround(*Dur));
      if (const json::Value *Args = O->get("args"))
        J.attribute("args", *Args);
    });
  }
}

static void writeEvents(TraceWriter &W, const Analysis &A,
                        const StringMap<unsigned> &ModuleIds) {
  const LinkRecord &R = A.Rec;
  json::OStream &J = W.out();
  W.metadata(LinkerPid, std::nullopt, "process_name", "linker: " + R.Linker);
  W.metadata(LinkerPid, std::nullopt, "process_sort_index", LinkerPid);
  W.lane(LinkerPid, PhaseTid, "linker");
  W.lane(LinkerPid, CacheTid, "ThinLTO cache");
  W.lane(LinkerPid, DistributorProcessTid, "distributor process");
  W.lane(LinkerPid, NotRunTid, "jobs that did not run");
  for (unsigned I = 0; I < A.LocalLanes; ++I)
    W.lane(LinkerPid, FirstLocalTid + I,
           "linker thread " + std::to_string(I + 1));
  W.metadata(DistributorPid, std::nullopt, "process_name",
             "distributor: " + R.Distributor);
  W.metadata(DistributorPid, std::nullopt, "process_sort_index",
             DistributorPid);
  for (size_t I = 0; I < A.Lanes.size(); ++I)
    W.lane(DistributorPid, I + 1, A.Lanes[I]);

  for (const Phase &P : A.Phases)
    W.complete(P.Name, "phase", LinkerPid, PhaseTid, P.When, [&] {
      if (P.Critical)
        J.attribute("critical", true);
    });
  if (R.DistributorStart)
    W.complete(R.Distributor, "distributor", LinkerPid, DistributorProcessTid,
               {*R.DistributorStart, orElse(R.DistributorEnd, A.End)}, [&] {
                 J.attribute("failed", R.DistributorFailed);
                 J.attribute("jobs", int64_t(A.Sum.Distributed));
               });

  for (const JobView &V : A.Jobs) {
    const ReportJob &Job = *V.J;
    // Earlier attempts: each on its worker's lane.
    for (size_t I : V.Attempts) {
      const AttemptView &AV = A.Attempts[I];
      bool IsMain = V.Pid == DistributorPid && I == V.Attempts.back();
      if (IsMain)
        continue;
      W.complete(Job.Module, "attempt", DistributorPid, AV.Lane, AV.When, [&] {
        J.attribute("task", int64_t(Job.Task));
        J.attribute("module", Job.Module);
        if (AV.Reported && AV.Reported->Number)
          J.attribute("attempt", int64_t(AV.Reported->Number));
        J.attribute("outcome", outcomeName(AV.Result));
        if (!AV.Worker.empty())
          J.attribute("worker", AV.Worker);
        if (!AV.Reason.empty())
          J.attribute("reason", AV.Reason);
        if (AV.Reported && AV.Reported->Retry)
          J.attribute("retry", true);
        J.attribute("source", AV.Reported ? "distributor" : "engine");
      });
    }
    // The linker's copy of a job whose distributor copy won (hedging).
    if (Job.LocalStart && V.Pid != LinkerPid)
      W.complete(
          Job.Module, "attempt", LinkerPid, FirstLocalTid + Job.LocalThread,
          {*Job.LocalStart,
           std::max(*Job.LocalStart, orElse(Job.LocalEnd, A.End))},
          [&] {
            J.attribute("task", int64_t(Job.Task));
            J.attribute("module", Job.Module);
            J.attribute("outcome", Job.LocalEnd ? "lost" : "unfinished");
            J.attribute("worker",
                        "linker thread " + std::to_string(Job.LocalThread + 1));
            J.attribute("reason", "the distributor's object reached the "
                                  "link first");
            J.attribute("source", "engine");
          });
    if (!V.Main)
      continue;
    W.complete(Job.Module, "job", V.Pid, V.Tid, *V.Main, [&] {
      J.attribute("task", int64_t(Job.Task));
      J.attribute("module", Job.Module);
      J.attribute("outcome", V.Outcome);
      J.attribute("cache", !R.Cache ? "off" : Job.CacheHit ? "hit" : "miss");
      J.attribute("input_bytes", int64_t(Job.InputBytes));
      J.attribute("object_bytes", int64_t(Job.ObjectBytes));
      J.attributeArray("imports", [&] {
        for (const std::string &M : Job.Imports)
          J.value(int64_t(ModuleIds.lookup(M)));
      });
      J.attribute("attempts", int64_t(Job.Attempts.size()));
      if (!V.Worker.empty())
        J.attribute("worker", V.Worker);
      if (V.Queue)
        W.seconds("queue_s", *V.Queue);
      if (V.Upload)
        W.seconds("upload_s", *V.Upload);
      if (V.Compile)
        W.seconds("compile_s", *V.Compile);
      if (V.Download)
        W.seconds("download_s", *V.Download);
      W.seconds("run_s", V.RunSeconds);
      if (!Job.FallbackReason.empty())
        J.attribute("fallback_reason", Job.FallbackReason);
      if (!Job.Failure.empty())
        J.attribute("failure", Job.Failure);
      if (Job.LocalKind == ReportSource::LocalSlot)
        J.attribute("local_run", "slot");
      else if (Job.LocalKind == ReportSource::Hedge)
        J.attribute("local_run", "hedge");
      else if (Job.LocalKind == ReportSource::Fallback)
        J.attribute("local_run", "fallback");
      W.at("cancel_sent_s", Job.CancelSent);
      J.attribute("source", Job.Attempts.empty() ? "engine" : "distributor");
      W.at("prepared_s", Job.Prepared);
      W.at("handed_over_s", Job.HandedOver);
      W.at("object_written_s", Job.ObjectWritten);
      W.at("linked_s", Job.Linked);
      W.at("local_start_s", Job.LocalStart);
      W.at("local_end_s", Job.LocalEnd);
      if (V.Critical)
        J.attribute("critical", true);
    });
  }
  writeTimeTrace(W, R);
}

static void writeSummary(TraceWriter &W, const Analysis &A,
                         ArrayRef<StringRef> Modules) {
  const LinkRecord &R = A.Rec;
  json::OStream &J = W.out();
  const Totals &T = A.Sum;
  J.attributeObject("dtlto", [&] {
    J.attribute("schema", 1);
    J.attribute("engine", "dtlto " DTLTO_VERSION);
    J.attribute("linker", R.Linker);
    J.attribute("output", R.Output);
    J.attribute("distributor", R.Distributor);
    J.attribute("remote_compiler", R.RemoteCompiler);
    W.seconds("start_epoch", A.T0);
    J.attribute("complete", A.Complete);
    J.attribute("link_failed", R.BackendFailed);
    J.attribute("cache", R.Cache);
    J.attribute("distributor_events", int64_t(R.Events));
    J.attribute("bad_events", int64_t(R.BadEvents));
    J.attribute("time_trace", R.TimeTraceFile);
    J.attributeArray("phases", [&] {
      for (const Phase &P : A.Phases)
        J.object([&] {
          J.attribute("name", P.Name);
          W.at("start", P.When.Start);
          W.at("end", P.When.End);
          J.attribute("critical", P.Critical);
        });
    });
    J.attributeObject("totals", [&] {
      J.attribute("jobs", int64_t(T.Jobs));
      J.attribute("cache_hits", int64_t(T.CacheHits));
      J.attribute("distributed", int64_t(T.Distributed));
      J.attribute("from_distributor", int64_t(T.FromDistributor));
      J.attribute("fallbacks", int64_t(T.Fallbacks));
      J.attribute("failed", int64_t(T.Failed));
      J.attribute("retries", int64_t(T.Retries));
      J.attribute("local_slot", int64_t(T.LocalSlot));
      J.attribute("hedged", int64_t(T.Hedged));
      J.attribute("hedges_won", int64_t(T.HedgesWon));
      J.attribute("cancelled", int64_t(T.Cancelled));
      J.attribute("input_bytes", int64_t(T.InputBytes));
      J.attribute("object_bytes", int64_t(T.ObjectBytes));
      J.attribute("bytes_moved", int64_t(T.InputBytes + T.ObjectBytes));
      W.seconds("link_s", T.LinkSeconds);
      W.seconds("engine_s", T.BackendSeconds);
      W.seconds("distributor_s", T.DistributorSeconds);
      W.seconds("farm_s", T.FarmSeconds);
      W.seconds("local_s", T.LocalSeconds);
    });
    J.attributeObject("bound", [&] {
      W.seconds("before_jobs_s", A.BeforeJobs);
      W.seconds("longest_job_s", A.LongestJob);
      if (A.Longest)
        J.attribute("longest_task", int64_t(A.Longest->J->Task));
      W.seconds("after_jobs_s", A.AfterJobs);
      W.seconds("bound_s", A.BeforeJobs + A.LongestJob + A.AfterJobs);
      W.seconds("actual_s", T.LinkSeconds);
    });
    J.attributeObject("critical_path", [&] {
      if (A.CriticalJob)
        J.attribute("task", int64_t(A.CriticalJob->J->Task));
      J.attributeArray("segments", [&] {
        for (const Phase &P : A.CriticalPath)
          J.object([&] {
            J.attribute("name", P.Name);
            W.at("start", P.When.Start);
            W.at("end", P.When.End);
          });
      });
    });
    J.attributeArray("modules", [&] {
      for (StringRef M : Modules)
        J.value(M);
    });
  });
}

std::string reportTrace(const LinkRecord &R) {
  Analysis A = analyse(R);
  // Every module a job is or imports from, numbered: the jobs' "imports"
  // give these numbers (a module imported by thousands is named once).
  StringMap<unsigned> ModuleIds;
  std::vector<StringRef> Modules;
  auto Number = [&](StringRef M) {
    if (ModuleIds.try_emplace(M, Modules.size()).second)
      Modules.push_back(M);
  };
  for (const auto &[Task, J] : R.Jobs) {
    Number(J.Module);
    for (const std::string &M : J.Imports)
      Number(M);
  }
  std::string Out;
  raw_string_ostream OS(Out);
  TraceWriter W(OS, A.T0);
  json::OStream &J = W.out();
  J.object([&] {
    J.attribute("displayTimeUnit", "ms");
    J.attributeArray("traceEvents", [&] { writeEvents(W, A, ModuleIds); });
    J.attributeObject("otherData", [&] { writeSummary(W, A, Modules); });
  });
  return Out;
}

// The trace inside a <script> element: every "<" (only ever inside a JSON
// string) as \u003c, so that nothing in a module's name can end the element.
static void writeEmbedded(raw_ostream &OS, StringRef Trace) {
  while (!Trace.empty()) {
    size_t Lt = Trace.find('<');
    OS << Trace.substr(0, Lt);
    if (Lt == StringRef::npos)
      return;
    OS << "\\u003c";
    Trace = Trace.drop_front(Lt + 1);
  }
}

static Error writeWhole(StringRef Path,
                        function_ref<void(raw_ostream &)> Write) {
  auto Fail = [&](std::error_code EC) {
    return createStringError(EC, "cannot write the DTLTO link report '" + Path +
                                     "': " + EC.message());
  };
  Expected<sys::fs::TempFile> Temp =
      sys::fs::TempFile::create(Path + ".%%%%%%%%.tmp");
  if (!Temp)
    return Fail(errorToErrorCode(Temp.takeError()));
  std::error_code EC;
  {
    raw_fd_ostream OS(Temp->FD, /*shouldClose=*/false);
    Write(OS);
    OS.flush();
    EC = OS.error();
    OS.clear_error();
  }
  if (EC) {
    consumeError(Temp->discard());
    return Fail(EC);
  }
  if (Error E = Temp->keep(Path))
    return Fail(errorToErrorCode(std::move(E)));
  return Error::success();
}

Error writeReport(const LinkRecord &Rec, StringRef HtmlPath) {
  std::string Trace = reportTrace(Rec);
  std::string JsonPath = HtmlPath.drop_back(strlen(".html")).str() + ".json";
  if (Error E = writeWhole(JsonPath, [&](raw_ostream &OS) { OS << Trace; }))
    return E;
  StringRef Page(PageTemplate);
  auto [Before, After] = Page.split("@DTLTO_TRACE@");
  return writeWhole(HtmlPath, [&](raw_ostream &OS) {
    OS << Before;
    writeEmbedded(OS, Trace);
    OS << After;
  });
}

} // namespace dtlto
