//===- LinkReport.h - A record of one DTLTO link, for its report ----------===//
//
// A build engineer whose DTLTO link is slow wants to know why: the thin link,
// one huge module, a queue on the farm, a host that failed, jobs the linker
// compiled itself, cache misses. The link report answers that. While a link
// runs, the engine records plain data here: when each phase began and ended,
// and for each job its module, input bytes, cache hit or miss, when its shard
// was written, when it went to the distributor, when its object was written
// and checked, why it fell back, when the linker compiled it. Distributors
// add what only they know (worker, queue, transfer and compile time) through
// the event channel (Events.h), which calls jobEvent().
//
// With -mllvm -dtlto-report=FILE.html or DTLTO_REPORT=FILE.html, the record
// becomes FILE.json (a Chrome trace) and FILE.html (a self-contained page;
// ReportWriter.h) when the linker exits, so that the final link is in it;
// and, in case the linker exits without running the exit hooks, once when
// the backend is done. With the progress display on (Progress.h) the same
// record feeds the live line on the terminal.
//
// The hooks are static and do nothing when no report or progress display was
// asked for. They may be called from any thread: the backend's pool threads,
// the main thread, the event channel's reader.
//
//===----------------------------------------------------------------------===//

#ifndef DTLTO_LINKREPORT_H
#define DTLTO_LINKREPORT_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dtlto {

struct Job;
struct JobEvent;

/// Seconds since the Unix epoch: the clock distributors stamp events with.
double wallSeconds();

/// Where the object a job gave the link came from, or why the linker ran
/// the job itself: a free local slot took it (-dtlto-local-jobs), a local
/// copy raced a farm job that ran too long (hedging), or the farm failed it.
enum class ReportSource {
  None,
  Cache,
  Distributor,
  LocalSlot,
  Hedge,
  Fallback
};

/// One attempt at a job, as the distributor reported it (or, when it reports
/// nothing, as the engine saw it: handed over, object there or not).
struct ReportAttempt {
  /// Lost: done, but another copy of the job (the linker's) reached the
  /// link first; only the report's writer says so.
  enum Outcome { Running, Done, Failed, Cancelled, Lost };
  unsigned Number = 0; // as reported; 0 when the distributor did not say
  std::string Worker;
  std::optional<double> Accepted, Started, Ended;
  std::optional<double> QueueSeconds, UploadSeconds, CompileSeconds,
      DownloadSeconds;
  Outcome Result = Running;
  std::string Reason;
  bool Retry = false;
};

/// Everything recorded about one ThinLTO job (one module).
struct ReportJob {
  unsigned Task = 0;
  std::string Module;
  uint64_t InputBytes = 0;          // bitcode the job reads (0 for a cache hit)
  std::vector<std::string> Imports; // modules it imports from
  bool CacheHit = false;
  std::optional<double> Prepared;      // shard written, or served by the cache
  std::optional<double> HandedOver;    // given to the distributor
  std::optional<uint64_t> EventId;     // its id on the event channel
  std::vector<ReportAttempt> Attempts; // reported by the distributor
  std::optional<double> ObjectWritten; // its object file's modification time
  std::optional<double> Linked;        // checked and added to the link
  uint64_t ObjectBytes = 0;
  std::string FallbackReason; // why the linker compiled it
  std::optional<double> LocalStart, LocalEnd;
  unsigned LocalThread = 0; // which of the linker's threads compiled it
  /// Why the linker compiled it (LocalSlot, Hedge or Fallback), if it did;
  /// and whose object went to the link: with hedging, either copy's.
  ReportSource LocalKind = ReportSource::None;
  ReportSource From = ReportSource::None;
  /// When the engine told the distributor it need not run the job (a local
  /// copy claimed or finished it).
  std::optional<double> CancelSent;
  std::string Failure; // why it failed the link
};

/// The whole record, as the writer and the progress display read it.
struct LinkRecord {
  std::string Linker;         // the program's name (ld.lld, ld64.lld, ...)
  std::string Output;         // the link's output file
  std::string Distributor;    // as messages name it ("python3 local.py")
  std::string RemoteCompiler; // the jobs' compiler
  bool Cache = false;         // the link has a ThinLTO cache
  size_t Tasks = 0;           // ThinLTO modules in the link
  double ProcessStart = 0;    // when the engine was loaded
  std::optional<double> LTOStart, BackendStart, DistributorStart,
      DistributorEnd, BackendEnd, LTOEnd, LinkEnd;
  bool DistributorFailed = false;
  bool BackendFailed = false; // the link fails: no final link follows
  /// Events the distributor sent, and lines of the channel that were not
  /// events or named no job the engine gave it.
  size_t Events = 0, BadEvents = 0;
  std::string TimeTraceFile;          // what --time-trace wrote, once it has
  std::map<unsigned, ReportJob> Jobs; // by task
};

/// What the progress line shows.
struct ReportCounts {
  size_t Total = 0, Cached = 0, Distributed = 0, Local = 0, Failed = 0,
         Running = 0, Prepared = 0;
  bool DistributorRunning = false;
  double Start = 0;                       // the backend's start
  std::optional<double> DistributorStart; // when jobs went out
};

class LinkReport {
public:
  /// The backend begins a link (Tasks modules): reads -dtlto-report /
  /// DTLTO_REPORT and -dtlto-progress / DTLTO_PROGRESS (a bad value is an
  /// error naming the option) and, when either asks for it, starts recording.
  static llvm::Error begin(llvm::StringRef LinkerOutput,
                           llvm::StringRef Distributor,
                           llvm::StringRef RemoteCompiler, bool Cache,
                           size_t Tasks);

  /// The job's cache lookup is done and, on a miss, its shard written.
  static void jobPrepared(const Job &J, bool CacheHit);
  /// The distributor starts with Jobs; a job's event id is its position
  /// here (one-shot: its index in the manifest's jobs). A streaming
  /// distributor starts with none, and each job it is given later is
  /// recorded by jobHandedOver.
  static void distributorStarted(llvm::ArrayRef<const Job *> Jobs);
  /// One job goes to a running distributor, under Id (streaming): call it
  /// before the job's record is written, so that its events find it.
  static void jobHandedOver(const Job &J, uint64_t Id);
  static void distributorEnded(bool Failed);
  /// What the distributor reported about a job: the event channel's reader
  /// calls this for every line parseJobEvent accepts (from its own thread).
  /// An event whose id names no job handed over counts as a bad line.
  static void jobEvent(const JobEvent &E);
  /// A line of the event channel that parseJobEvent refused.
  static void badEvent();
  /// The job's object passed the checks and went to the link, From the
  /// cache, the distributor or one of the linker's own runs. Only the first
  /// object of a job is linked; the other copy is not reported here.
  static void objectLinked(const Job &J, uint64_t Bytes, ReportSource From);
  /// The engine sent the distributor a cancel for the job.
  static void cancelSent(const Job &J);
  /// The linker compiles the job instead, for Reason.
  static void fellBack(const Job &J, llvm::StringRef Reason);
  /// The job failed the link.
  static void jobFailed(const Job &J, llvm::StringRef Failure);
  /// While alive, the linker compiles the job (on this thread), because of
  /// Kind: LocalSlot, Hedge or Fallback.
  class LocalCompile {
    unsigned Task;
    bool Recording;

  public:
    LocalCompile(const Job &J, ReportSource Kind);
    ~LocalCompile();
    LocalCompile(const LocalCompile &) = delete;
    LocalCompile &operator=(const LocalCompile &) = delete;
  };
  /// The backend's work is done (objects linked, files removed), or it
  /// failed the link.
  static void backendEnded(bool Failed);

  /// LTO::run begins and ends (PlainLTO.cpp), for every linker: they bound
  /// the thin link and the final link. Recorded whether or not a report is
  /// asked for (two clock readings): the report begins later.
  static void ltoStarted();
  static void ltoEnded();
  /// --time-trace wrote Path (PlainLTO.cpp sees LLD write it): the report
  /// merges LLD's scopes from it.
  static void timeTraceWritten(llvm::StringRef Path);

  /// A copy of the record, or nothing when none is kept.
  static std::optional<LinkRecord> snapshot();
  static std::optional<ReportCounts> counts();
};

} // namespace dtlto

#endif
