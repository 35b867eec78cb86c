//===- Distributor.cpp - Running the distributor process ------------------===//

#include "dtlto/Distributor.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include <vector>

using namespace llvm;

namespace dtlto {

static const char *const OptionHint =
    " (set by --thinlto-distributor=, /thinlto-distributor: for lld-link, or "
    "clang's -fthinlto-distributor=)";

Expected<std::string> findDistributor(StringRef Distributor) {
  if (Distributor.empty())
    return createStringError(inconvertibleErrorCode(),
                             Twine("the DTLTO distributor is empty") +
                                 OptionHint);
  std::string Path(Distributor);
  if (!sys::path::has_parent_path(Distributor)) {
    ErrorOr<std::string> Found = sys::findProgramByName(Distributor);
    if (!Found)
      return createStringError(Found.getError(),
                               "cannot find the DTLTO distributor '" +
                                   Distributor + "' in PATH" + OptionHint);
    Path = *Found;
  }
  if (!sys::fs::exists(Path))
    return createStringError(std::make_error_code(std::errc::no_such_file_or_directory),
                             "the DTLTO distributor '" + Path +
                                 "' does not exist" + OptionHint);
  if (sys::fs::is_directory(Path) || !sys::fs::can_execute(Path))
    return createStringError(std::make_error_code(std::errc::permission_denied),
                             "the DTLTO distributor '" + Path +
                                 "' is not an executable file; check its "
                                 "permissions (chmod +x)" +
                                 OptionHint);
  return Path;
}

Error runDistributor(StringRef Program, ArrayRef<std::string> Args,
                     StringRef ManifestPath) {
  std::vector<StringRef> Argv;
  Argv.push_back(Program);
  for (const std::string &A : Args)
    Argv.push_back(A);
  Argv.push_back(ManifestPath);

  std::string ErrMsg;
  bool ExecutionFailed = false;
  int Code = sys::ExecuteAndWait(Program, Argv, /*Env=*/std::nullopt,
                                 /*Redirects=*/{}, /*SecondsToWait=*/0,
                                 /*MemoryLimit=*/0, &ErrMsg, &ExecutionFailed);
  if (ExecutionFailed)
    return createStringError(inconvertibleErrorCode(),
                             "cannot run the DTLTO distributor '" + Program +
                                 "': " + ErrMsg);
  if (Code == 0)
    return Error::success();
  std::string How = Code > 0 ? "failed with exit code " + std::to_string(Code)
                             : "was terminated: " + ErrMsg;
  return createStringError(inconvertibleErrorCode(),
                           "the DTLTO distributor '" + Program + "' " + How +
                               " running the jobs in '" + ManifestPath +
                               "'; its own messages above say why");
}

} // namespace dtlto
