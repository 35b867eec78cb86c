//===- Shards.cpp - Per-module summary index shards -----------------------===//

#include "dtlto/Shards.h"

#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace dtlto {

static Error writeFile(StringRef Path, StringRef Contents, StringRef What) {
  std::error_code EC;
  raw_fd_ostream OS(Path, EC, sys::fs::OF_None);
  if (!EC) {
    OS << Contents;
    OS.close();
    EC = OS.error();
    OS.clear_error();
  }
  if (EC)
    return createStringError(EC, "cannot write the " + What + " '" + Path +
                                     "': " + EC.message());
  return Error::success();
}

Expected<std::vector<std::string>>
writeShard(const ModuleSummaryIndex &CombinedIndex,
           const DenseMap<StringRef, GVSummaryMapTy> &ModuleToDefinedGVSummaries,
           const FunctionImporter::ImportMapTy &ImportList,
           const ShardRequest &Req) {
  ModuleToSummariesForIndexTy ModuleToSummaries;
  GVSummaryPtrSet DeclarationSummaries;
  gatherImportedSummariesForModule(Req.ModuleID, ModuleToDefinedGVSummaries,
                                   ImportList, ModuleToSummaries,
                                   DeclarationSummaries);

  // Serialize once, write as often as asked.
  SmallString<0> Bitcode;
  raw_svector_ostream BitcodeOS(Bitcode);
  writeIndexToFile(CombinedIndex, BitcodeOS, &ModuleToSummaries,
                   &DeclarationSummaries);
  if (Error E = writeFile(Req.ShardPath, Bitcode, "DTLTO index shard"))
    return std::move(E);
  if (Req.EmitIndexFile)
    if (Error E = writeFile((Req.ModuleID + ".thinlto.bc").str(), Bitcode,
                            "ThinLTO index file"))
      return std::move(E);
  if (Req.EmitImportsFile)
    if (Error E = EmitImportsFiles(Req.ModuleID,
                                   (Req.ModuleID + ".imports").str(),
                                   ModuleToSummaries))
      return std::move(E);

  std::vector<std::string> ImportedFrom;
  for (const auto &[Module, Summaries] : ModuleToSummaries)
    if (Module != Req.ModuleID)
      ImportedFrom.push_back(Module);
  return ImportedFrom;
}

} // namespace dtlto
