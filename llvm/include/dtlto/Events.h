//===- Events.h - What a distributor tells the engine about each job ------===//
//
// The two channels of docs/manifest.md. Events: a pipe whose write end a
// distributor finds as DTLTO_EVENTS_FD, one JSON object per line, each
// saying what happened to one job (accepted, started on a worker, done,
// failed, cancelled); the engine acts on `done` (the object is checked and
// linked at once) and the link report shows the rest. Jobs (streaming): the
// records the engine writes to DTLTO_JOBS_FD. This is the one place in the
// engine that knows their lines.
//
//===----------------------------------------------------------------------===//

#ifndef DTLTO_EVENTS_H
#define DTLTO_EVENTS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <cstdint>
#include <optional>
#include <string>

namespace dtlto {

struct JobEvent {
  enum Kind { Accepted, Started, Done, Failed, Cancelled };
  /// The job: its index in the manifest's jobs (one-shot), or the id the
  /// engine gave it (streaming).
  uint64_t Id = 0;
  Kind What = Accepted;
  /// Seconds since the Unix epoch, as the distributor saw it.
  std::optional<double> Time;
  std::string Worker;
  std::optional<double> QueueSeconds, UploadSeconds, CompileSeconds,
      DownloadSeconds;
  unsigned Attempt = 0; // 0: not said
  std::string Reason;   // for Failed
  bool Retry = false;   // for Failed: the distributor tries again
  /// For Done from the plugin host: the object's bytes follow the line.
  uint64_t Bytes = 0;
};

/// Parses one line of the channel. An error says what is wrong with it.
llvm::Expected<JobEvent> parseJobEvent(llvm::StringRef Line);

/// The name of an event kind as the channel spells it.
llvm::StringRef jobEventName(JobEvent::Kind K);

struct Job;

/// Lines of the job channel (streaming), without the newline: a job with
/// its id and input bytes, a request to cancel one, and the end.
std::string jobRecordLine(uint64_t Id, const Job &J);
std::string cancelLine(uint64_t Id);
std::string endLine();

/// The plugin host's dialect (docs/plugins.md, "The host protocol"): the
/// same lines, with bytes after some of them. How many bytes follow an
/// event line: its "bytes", 0 when it has none or is no event.
uint64_t payloadBytes(llvm::StringRef Line);

/// What every job shares, first on the job channel, followed by the bytes
/// of Config. NativeFiles: the name the common args give it (dtlto-backend
/// as the remote compiler), else empty.
std::string linkFrame(llvm::StringRef LinkerOutput, llvm::StringRef Triple,
                      llvm::ArrayRef<std::string> CommonArgs,
                      llvm::ArrayRef<std::string> NativeFiles,
                      llvm::StringRef Config);

/// A job record with "sizes": the line that the bytes of each input follow,
/// in the order of its "inputs" (Contents has them in that order; the
/// caller sends them after it, DistributorProcess::send's Body).
std::string jobFrameLine(uint64_t Id, const Job &J,
                         llvm::ArrayRef<llvm::StringRef> Contents);

} // namespace dtlto

#endif
