//===- Shards.cpp - Per-module summary index shards -----------------------===//

#include "dtlto/Shards.h"
#include "dtlto/PreparedInputs.h"
#include "dtlto/WriteFile.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace dtlto {

static Error writeBytes(StringRef Path, StringRef Contents, StringRef What) {
  return writeFile(Path, What, [&](raw_ostream &OS) { OS << Contents; });
}

// Adds a declaration summary for the globals that what the shard holds
// refers to by address (variables, functions whose address is taken) and
// that are local to the output. Only those change code: an access to a
// global the backend knows is local is direct, not through the GOT; a call
// is the same instruction either way. Each one's module becomes an input of
// the job (clang opens it), so the fewer the better. One summary per global
// is enough: once the thin link has propagated dso_local, every copy
// carries the same flags; a copy in a module the job reads anyway is
// preferred.
static void addReferencedDeclarations(
    ModuleToSummariesForIndexTy &Summaries, GVSummaryPtrSet &Declarations,
    const std::function<bool(StringRef)> &IsThinModule) {
  DenseSet<GlobalValue::GUID> Held;
  std::vector<ValueInfo> Referenced;
  for (const auto &[Module, Map] : Summaries)
    for (const auto &[GUID, S] : Map) {
      Held.insert(GUID);
      for (ValueInfo VI : S->getBaseObject()->refs())
        Referenced.push_back(VI);
    }
  for (ValueInfo VI : Referenced) {
    if (!VI || VI.getSummaryList().empty() || !Held.insert(VI.getGUID()).second)
      continue;
    GlobalValueSummary *Pick = nullptr;
    for (const std::unique_ptr<GlobalValueSummary> &S : VI.getSummaryList()) {
      if (!IsThinModule(S->modulePath()))
        continue;
      if (!Pick)
        Pick = S.get();
      if (Summaries.count(S->modulePath())) {
        Pick = S.get();
        break;
      }
    }
    if (!Pick || !Pick->isDSOLocal())
      continue;
    Summaries[std::string(Pick->modulePath())][VI.getGUID()] = Pick;
    Declarations.insert(Pick);
  }
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
  // What the module imports, for the .imports file (as in-process ThinLTO
  // writes it): before declarations bring their modules in.
  std::vector<std::string> ImportedNames;
  for (const auto &[Module, Summaries] : ModuleToSummaries)
    if (Module != Req.ModuleID)
      ImportedNames.push_back(originalName(Module));
  if (Req.AddReferencedDeclarations)
    addReferencedDeclarations(ModuleToSummaries, DeclarationSummaries,
                              Req.IsThinModule);

  // Serialize once, write as often as asked.
  SmallString<0> Bitcode;
  raw_svector_ostream BitcodeOS(Bitcode);
  writeIndexToFile(CombinedIndex, BitcodeOS, &ModuleToSummaries,
                   &DeclarationSummaries);
  if (Error E = writeBytes(Req.ShardPath, Bitcode, "DTLTO index shard"))
    return std::move(E);
  if (Req.EmitIndexFile)
    if (Error E = writeBytes(Req.EmitName + ".thinlto.bc", Bitcode,
                            "ThinLTO index file"))
      return std::move(E);

  std::vector<std::string> ImportedFrom;
  for (const auto &[Module, Summaries] : ModuleToSummaries)
    if (Module != Req.ModuleID)
      ImportedFrom.push_back(Module);

  // The modules imported from, one per line, by the names the user knows,
  // sorted as in-process ThinLTO sorts them.
  if (Req.EmitImportsFile) {
    llvm::sort(ImportedNames);
    std::string Imports;
    for (const std::string &Name : ImportedNames)
      Imports += Name + "\n";
    if (Error E = writeBytes(Req.EmitName + ".imports", Imports,
                            "ThinLTO imports file"))
      return std::move(E);
  }
  return ImportedFrom;
}

} // namespace dtlto
