//===- ObjectCheck.h - Trust, but verify, what a distributor returns ------===//
//
// A distributor's exit code is not enough: compilers have been seen to exit 0
// after failing to load an imported module, leaving an object without the
// module's code. Every object is checked before it reaches the link (or the
// cache): it must be a valid object for the link's target and define every
// symbol that the combined summary index says its module provides.
//
//===----------------------------------------------------------------------===//

#ifndef DTLTO_OBJECTCHECK_H
#define DTLTO_OBJECTCHECK_H

#include "llvm/IR/ModuleSummaryIndex.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBufferRef.h"
#include "llvm/TargetParser/Triple.h"
#include <string>
#include <vector>

namespace dtlto {

/// A symbol a module's object may have to define, with the GUID the index
/// knows it by.
struct RequiredSymbol {
  llvm::StringRef Name;
  llvm::GlobalValue::GUID GUID;
  /// A function in a CFI jump table (-fsanitize=cfi): the backend renames
  /// its definition to <Name>.cfi, and the regular LTO object defines Name.
  bool CfiRenamed = false;
};

/// The symbols a module's object must define: its live definitions that keep
/// strong external linkage after the thin link (everything else may be
/// internalized, inlined away or dropped by the backend). Locals promoted by
/// the thin link are among them, known by their source name; checkObject
/// tells them apart, only for names it does not find.
std::vector<RequiredSymbol>
requiredSymbols(const llvm::ModuleSummaryIndex &CombinedIndex,
                const llvm::GVSummaryMapTy &DefinedGlobals);

/// Checks one object; the error names the object file and what is wrong.
llvm::Error checkObject(llvm::MemoryBufferRef Object, const llvm::Triple &TT,
                        llvm::ArrayRef<RequiredSymbol> Required);

} // namespace dtlto

#endif
