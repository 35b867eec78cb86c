//===- InputPreparation.h - Module IDs that remote jobs can load ----------===//
//
// A remote backend job loads its module, and every module it imports from,
// by module ID, as a file path. prepareInput() gives an input a module ID
// that is one, recording the copy to write when the input is not a file of
// its own (PreparedInputs.h: the backend writes the copies its jobs read).
// lto::DTLTO::addInput (LLD's ELF and COFF drivers) and the plain-LTO
// linkers' LTO::add (PlainLTO.cpp) both call it.
//
//===----------------------------------------------------------------------===//

#ifndef DTLTO_INPUTPREPARATION_H
#define DTLTO_INPUTPREPARATION_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <string>

namespace llvm::lto {
class InputFile;
}

namespace dtlto {

/// Whether the archive at Path is a thin archive (read from its magic).
llvm::Expected<bool> isThinArchiveFile(llvm::StringRef Path);

struct InputContext {
  llvm::StringRef LinkerOutputFile;
  /// The inputs added so far, this one included (LLVM's copy names use it).
  unsigned InputNumber = 0;
  /// LLD's ELF and COFF drivers say which inputs are archive members, and of
  /// which archive (InputFile::getArchivePath). The other linkers do not;
  /// there an input is used in place only when its module ID is the path of
  /// a file holding exactly its bytes.
  bool LinkerNamesMembers = false;
  /// isThinArchiveFile, or a caching version of it.
  llvm::function_ref<llvm::Expected<bool>(llvm::StringRef)> IsThinArchive =
      isThinArchiveFile;
  /// Whether another input has that module ID already.
  llvm::function_ref<bool(llvm::StringRef)> IDTaken;
};

/// The module ID Input must get, or "" when it keeps its own:
///   - archive members, the bitcode inside FatLTO objects (loose, or in
///     either kind of archive) and inputs that are no file of their own: a
///     copy in the output's directory (recorded, written later; a thin
///     archive's member is hard-linked there where it can be);
///   - members of thin archives in upstream-compatible mode: the member's
///     own path, as LLVM's DTLTO;
///   - inputs whose path is not ASCII (LLVM 22's index writer garbles such
///     paths): a copy with an ASCII name.
llvm::Expected<std::string> prepareInput(llvm::lto::InputFile &Input,
                                         const InputContext &C);

} // namespace dtlto

#endif
