//===- PreparedInputs.cpp - What input preparation tells the backend ------===//

#include "dtlto/PreparedInputs.h"
#include "dtlto/WriteFile.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Parallel.h"
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

Error writeCopies(ArrayRef<std::string> ModuleIDs,
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

  std::mutex ErrMu;
  std::optional<Error> First;
  parallelForEach(ToWrite, [&](const std::pair<std::string, PreparedInput> &W) {
    std::error_code EC = writeFileOrError(
        W.first, [&](raw_ostream &OS) { OS << W.second.Copy.getBuffer(); });
    if (!EC)
      return;
    std::lock_guard<std::mutex> Lock(ErrMu);
    Forget(W.first);
    if (!First)
      First = createStringError(EC, "DTLTO cannot write the " +
                                        W.second.Description + " to '" +
                                        W.first + "': " + EC.message());
  });
  if (First)
    return std::move(*First);
  return Error::success();
}

void forgetPreparedInputs() {
  std::lock_guard<std::mutex> Lock(Mu);
  Prepared.clear();
}

} // namespace dtlto
