//===- PreparedInputs.h - What input preparation tells the backend --------===//
//
// Input preparation (lto::DTLTO) gives some modules new IDs: archive members
// (regular and thin) and FatLTO bitcode get a file of their own. The backend
// needs to know, for such a module, the name users know it by (for LLD's
// diagnostics and the files of --thinlto-emit-index-files) and, for a copy,
// the bytes to write. Copies are written by the backend, and only
// those a job reads: a relink served wholly from the ThinLTO cache writes
// none. lto::DTLTO and the backend are separate objects that LLD's interfaces
// do not connect, hence this process-wide table.
//
//===----------------------------------------------------------------------===//

#ifndef DTLTO_PREPAREDINPUTS_H
#define DTLTO_PREPAREDINPUTS_H

#include "dtlto/WorkerTrace.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBufferRef.h"
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dtlto {

struct PreparedInput {
  std::string OriginalName; // e.g. "lib.a(m.o at 140)"
  /// The bitcode file to write at the module ID's path; empty when the
  /// module ID names an existing file (a loose bitcode file).
  llvm::MemoryBufferRef Copy;
  /// A file with exactly Copy's bytes (a thin archive's member): the copy
  /// is a hard link to it where the file system allows one, and written
  /// otherwise.
  std::string LinkFrom;
  /// The file system LinkFrom is on (a hard link cannot leave it).
  uint64_t LinkFromDevice = 0;
  std::string Description; // "archive member 'lib.a(m.o)'", for errors
};

void recordPreparedInput(llvm::StringRef ModuleID, PreparedInput Input);
/// The name before preparation, or ModuleID itself.
std::string originalName(llvm::StringRef ModuleID);
/// Writes the copies among ModuleIDs (others are skipped), one after the
/// other on the calling thread, each in a time-trace scope when Trace says
/// the link traces. Each is given to Register before it is created, and to
/// Forget if it could not be (what is at its path then is not ours).
llvm::Error writeCopies(llvm::ArrayRef<std::string> ModuleIDs,
                        TraceSettings Trace,
                        llvm::function_ref<void(llvm::StringRef)> Register,
                        llvm::function_ref<void(llvm::StringRef)> Forget);
/// The bytes of the copy input preparation made for ModuleID (an archive
/// member, FatLTO bitcode), which a plugin gets in memory instead of a file;
/// std::nullopt when ModuleID names a file of its own.
std::optional<llvm::MemoryBufferRef> preparedCopy(llvm::StringRef ModuleID);
void forgetPreparedInputs();

} // namespace dtlto

#endif
