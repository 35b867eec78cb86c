//===- Shards.h - Per-module summary index shards -------------------------===//
//
// A remote backend job cannot see the combined summary index of the link; it
// gets a shard: the summaries of its own module and of everything it imports.
//
//===----------------------------------------------------------------------===//

#ifndef DTLTO_SHARDS_H
#define DTLTO_SHARDS_H

#include "llvm/ADT/SmallString.h"
#include "llvm/IR/ModuleSummaryIndex.h"
#include "llvm/Support/Error.h"
#include "llvm/Transforms/IPO/FunctionImport.h"
#include <string>
#include <vector>

namespace dtlto {

struct ShardRequest {
  llvm::StringRef ModuleID;
  llvm::StringRef ShardPath;
  /// --thinlto-emit-index-files / --thinlto-emit-imports-files: also write
  /// <EmitName>.thinlto.bc and <EmitName>.imports, as in-process ThinLTO
  /// does. EmitName is the module's name before input preparation.
  std::string EmitName;
  bool EmitIndexFile = false;
  /// Also carry a summary (filed under the module itself, so nothing is
  /// imported and no module is added to the job's inputs) of each global
  /// that the module and its imports take the address of and that is local
  /// to the output. In-process ThinLTO sees them in the combined index and
  /// accesses them directly instead of through the GOT; a remote clang sees
  /// only what the shard holds, and so does dtlto-backend.
  bool AddReferencedDeclarations = false;
  /// With AddReferencedDeclarations, for a COFF link: also each function
  /// called that is local to the output. A dllimport declaration of a
  /// function the image itself defines is called through its import slot
  /// unless the backend knows the function is local: in-process ThinLTO
  /// then drops dllimport (no LNK4217 warning, no local-import slot that
  /// /OPT:REF could strip); a remote clang knows it only from the shard.
  bool AddCalledDeclarations = false;
  bool EmitImportsFile = false;
  /// When set, the shard goes here instead of to ShardPath (a plugin gets
  /// it in memory).
  llvm::SmallString<0> *InMemory = nullptr;
};

/// Writes the shard for one module and returns the modules it imports from
/// (sorted), which the job needs as inputs.
llvm::Expected<std::vector<std::string>>
writeShard(const llvm::ModuleSummaryIndex &CombinedIndex,
           const llvm::DenseMap<llvm::StringRef, llvm::GVSummaryMapTy>
               &ModuleToDefinedGVSummaries,
           const llvm::FunctionImporter::ImportMapTy &ImportList,
           const ShardRequest &Req);

} // namespace dtlto

#endif
