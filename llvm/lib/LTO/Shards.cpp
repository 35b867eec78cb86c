//===- Shards.cpp - Per-module summary index shards -----------------------===//

#include "dtlto/Shards.h"
#include "dtlto/TempFiles.h"

#include "llvm/ADT/STLExtras.h"
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
    if (Error E = writeFile(Req.EmitName + ".thinlto.bc", Bitcode,
                            "ThinLTO index file"))
      return std::move(E);

  std::vector<std::string> ImportedFrom;
  for (const auto &[Module, Summaries] : ModuleToSummaries)
    if (Module != Req.ModuleID)
      ImportedFrom.push_back(Module);

  // The modules imported from, one per line, by the names the user knows,
  // sorted as in-process ThinLTO sorts them.
  if (Req.EmitImportsFile) {
    std::vector<std::string> Names;
    for (const std::string &M : ImportedFrom)
      Names.push_back(originalName(M));
    llvm::sort(Names);
    std::string Imports;
    for (const std::string &Name : Names)
      Imports += Name + "\n";
    if (Error E = writeFile(Req.EmitName + ".imports", Imports,
                            "ThinLTO imports file"))
      return std::move(E);
  }
  return ImportedFrom;
}

} // namespace dtlto
