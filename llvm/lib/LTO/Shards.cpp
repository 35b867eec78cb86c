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

// A summary that says only what a declaration needs (linkage, visibility,
// dso_local, liveness), with the flags of Def, for the module ModuleID.
static std::unique_ptr<GlobalValueSummary>
declarationSummary(const GlobalValueSummary &Def, StringRef ModuleID) {
  std::unique_ptr<GlobalValueSummary> S;
  const GlobalValueSummary *Base = Def.getBaseObject();
  if (isa<FunctionSummary>(Base)) {
    // No function flags: the backend propagates them (nounwind, norecurse,
    // ...) to the module's declarations that its summaries name.
    S = std::make_unique<FunctionSummary>(
        Def.flags(), /*NumInsts=*/0, FunctionSummary::FFlags{},
        SmallVector<ValueInfo, 0>(), SmallVector<FunctionSummary::EdgeTy, 0>(),
        std::vector<GlobalValue::GUID>(),
        std::vector<FunctionSummary::VFuncId>(),
        std::vector<FunctionSummary::VFuncId>(),
        std::vector<FunctionSummary::ConstVCall>(),
        std::vector<FunctionSummary::ConstVCall>(),
        std::vector<FunctionSummary::ParamAccess>(),
        std::vector<CallsiteInfo>(), std::vector<AllocInfo>());
  } else {
    S = std::make_unique<GlobalVarSummary>(
        Def.flags(), cast<GlobalVarSummary>(Base)->varflags(),
        SmallVector<ValueInfo, 0>());
  }
  S->setModulePath(ModuleID);
  return S;
}

// Adds a declaration summary for the globals that what the shard holds
// refers to by address (variables, functions whose address is taken) and
// that are local to the output. Only those change code: an access to a
// global the backend knows is local is direct, not through the GOT; a call
// is the same instruction either way, but for a COFF function declared
// dllimport (WithCalls: the functions called, too), which is called through
// its import slot unless the backend knows the function is local.
//
// Each is filed under the job's own module, with the definition's flags and
// nothing else. The backend reads dso_local from it, and it provokes no
// import: a summary under another module would make the remote compiler open
// that module and import the global as a declaration, which can reorder the
// module's globals, and a global defined only in a regular LTO module (the
// vtables and CFI jump tables of split LTO units) has no module file to
// open at all. Once the thin link has propagated dso_local, every copy of a
// global carries the same flags, so any one will do.
static void addReferencedDeclarations(
    ModuleToSummariesForIndexTy &Summaries, GVSummaryPtrSet &Declarations,
    StringRef ModuleID, bool WithCalls,
    std::vector<std::unique_ptr<GlobalValueSummary>> &Owned) {
  DenseSet<GlobalValue::GUID> Held;
  std::vector<ValueInfo> Referenced;
  for (const auto &[Module, Map] : Summaries)
    for (const auto &[GUID, S] : Map) {
      Held.insert(GUID);
      const GlobalValueSummary *Base = S->getBaseObject();
      for (ValueInfo VI : Base->refs())
        Referenced.push_back(VI);
      if (const auto *F = dyn_cast<FunctionSummary>(Base); F && WithCalls)
        for (const FunctionSummary::EdgeTy &Call : F->calls())
          Referenced.push_back(Call.first);
    }
  GVSummaryMapTy &Own = Summaries[std::string(ModuleID)];
  for (ValueInfo VI : Referenced) {
    if (!VI || VI.getSummaryList().empty() || !Held.insert(VI.getGUID()).second)
      continue;
    const GlobalValueSummary &Def = *VI.getSummaryList().front();
    if (!Def.isDSOLocal() || !Def.getBaseObject())
      continue;
    Owned.push_back(declarationSummary(Def, ModuleID));
    Own[VI.getGUID()] = Owned.back().get();
    Declarations.insert(Owned.back().get());
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
  // The modules imported from. Declaration summaries below are filed under
  // the module itself and add none.
  std::vector<std::string> ImportedFrom;
  for (const auto &[Module, Summaries] : ModuleToSummaries)
    if (Module != Req.ModuleID)
      ImportedFrom.push_back(Module);
  std::vector<std::unique_ptr<GlobalValueSummary>> DeclarationCopies;
  if (Req.AddReferencedDeclarations)
    addReferencedDeclarations(ModuleToSummaries, DeclarationSummaries,
                              Req.ModuleID, Req.AddCalledDeclarations,
                              DeclarationCopies);

  // Serialize once, write as often as asked.
  SmallString<0> Bitcode;
  raw_svector_ostream BitcodeOS(Bitcode);
  writeIndexToFile(CombinedIndex, BitcodeOS, &ModuleToSummaries,
                   &DeclarationSummaries);
  if (Req.InMemory)
    *Req.InMemory = Bitcode;
  else if (Error E = writeBytes(Req.ShardPath, Bitcode, "DTLTO index shard"))
    return std::move(E);
  if (Req.EmitIndexFile)
    if (Error E = writeBytes(Req.EmitName + ".thinlto.bc", Bitcode,
                            "ThinLTO index file"))
      return std::move(E);

  // The modules imported from, one per line, by the names the user knows,
  // sorted as in-process ThinLTO sorts them.
  if (Req.EmitImportsFile) {
    std::vector<std::string> ImportedNames;
    for (const std::string &Module : ImportedFrom)
      ImportedNames.push_back(originalName(Module));
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
