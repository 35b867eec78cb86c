//===- PreparedInputs.cpp - What input preparation tells the backend ------===//

#include "dtlto/PreparedInputs.h"
#include "dtlto/WorkerTrace.h"
#include "dtlto/WriteFile.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Parallel.h"
#include "llvm/Support/TimeProfiler.h"
#include <mutex>
#include <optional>

using namespace llvm;

namespace dtlto {

static std::mutex Mu;
static StringMap<PreparedInput> Prepared;

void recordPreparedInput(StringRef ModuleID, PreparedInput Input) {
  std::lock_guard<std::mutex> Lock(Mu);
  Prepared[ModuleID] = std::move(Input);
}

std::string originalName(StringRef ModuleID) {
  std::lock_guard<std::mutex> Lock(Mu);
  auto It = Prepared.find(ModuleID);
  return It == Prepared.end() ? std::string(ModuleID)
                              : It->second.OriginalName;
}

Error writeCopies(ArrayRef<std::string> ModuleIDs, TraceSettings Trace,
                  function_ref<void(StringRef)> Register,
                  function_ref<void(StringRef)> Forget) {
  std::vector<std::pair<std::string, PreparedInput>> ToWrite;
  {
    std::lock_guard<std::mutex> Lock(Mu);
    for (const std::string &ID : ModuleIDs) {
      auto It = Prepared.find(ID);
      if (It != Prepared.end() && It->second.Copy.getBufferStart())
        ToWrite.emplace_back(ID, It->second);
    }
  }
  for (const auto &[Path, Input] : ToWrite)
    Register(Path);

  // One result per copy, so that the error names the first failed copy in
  // the order asked for, whichever thread failed first.
  std::vector<std::error_code> Results(ToWrite.size());
  parallelFor(0, ToWrite.size(), [&](size_t I) {
    WorkerTrace Worker(Trace);
    TimeTraceScope Scope("Serialize bitcode input for DTLTO", ToWrite[I].first);
    Results[I] = writeFileOrError(ToWrite[I].first, [&](raw_ostream &OS) {
      OS << ToWrite[I].second.Copy.getBuffer();
    });
  });
  std::optional<size_t> First;
  for (size_t I = 0; I < ToWrite.size(); ++I) {
    if (!Results[I])
      continue;
    Forget(ToWrite[I].first);
    if (!First)
      First = I;
  }
  if (!First)
    return Error::success();
  const auto &[Path, Input] = ToWrite[*First];
  std::error_code EC = Results[*First];
  return createStringError(EC, "DTLTO cannot write the " + Input.Description +
                                   " to '" + Path + "': " + EC.message());
}
std::optional<MemoryBufferRef> preparedCopy(StringRef ModuleID) {
  std::lock_guard<std::mutex> Lock(Mu);
  auto It = Prepared.find(ModuleID);
  if (It == Prepared.end() || !It->second.Copy.getBufferStart())
    return std::nullopt;
  return It->second.Copy;
}

void forgetPreparedInputs() {
  std::lock_guard<std::mutex> Lock(Mu);
  Prepared.clear();
}

} // namespace dtlto
