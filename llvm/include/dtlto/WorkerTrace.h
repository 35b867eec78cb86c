//===- WorkerTrace.h - --time-trace scopes on worker threads ---------------===//
//
// LLVM records time-trace scopes only on threads that have a profiler of
// their own: the main thread, where LLD starts it, and threads that start
// one, as LLVM's in-process ThinLTO backend does for each backend task. A
// task of ours on a pool thread holds a WorkerTrace for its duration, so
// that the scopes it opens (one per index shard, one per input copy) reach
// the link's --time-trace file like those of the main thread.
//
//===----------------------------------------------------------------------===//

#ifndef DTLTO_WORKERTRACE_H
#define DTLTO_WORKERTRACE_H

#include "llvm/Support/TimeProfiler.h"

namespace dtlto {

/// Whether, and how finely, the link traces (lto::Config's TimeTrace*).
struct TraceSettings {
  bool Enabled = false;
  unsigned Granularity = 500;
};

class WorkerTrace {
  bool Started = false;

public:
  explicit WorkerTrace(TraceSettings S) {
    if (S.Enabled && !llvm::getTimeTraceProfilerInstance()) {
      llvm::timeTraceProfilerInitialize(S.Granularity, "DTLTO worker");
      Started = true;
    }
  }
  ~WorkerTrace() {
    if (Started)
      llvm::timeTraceProfilerFinishThread();
  }
  WorkerTrace(const WorkerTrace &) = delete;
  WorkerTrace &operator=(const WorkerTrace &) = delete;
};

} // namespace dtlto

#endif
