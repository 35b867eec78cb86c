//===- ObjectCheck.cpp - Trust, but verify, what a distributor returns ----===//

#include "dtlto/ObjectCheck.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Object/ObjectFile.h"

using namespace llvm;

namespace dtlto {

std::vector<RequiredSymbol>
requiredSymbols(const ModuleSummaryIndex &CombinedIndex,
                const GVSummaryMapTy &DefinedGlobals) {
  std::vector<RequiredSymbol> Names;
  for (const auto &[GUID, Summary] : DefinedGlobals) {
    if (!Summary->isLive() ||
        Summary->linkage() != GlobalValue::ExternalLinkage)
      continue;
    // Other modules get their own copies of a variable they only read or
    // only write; the defining module then internalizes and may drop it.
    if (auto *Var = dyn_cast<GlobalVarSummary>(Summary))
      if (CombinedIndex.isReadOnly(Var) || CombinedIndex.isWriteOnly(Var))
        continue;
    StringRef Name = CombinedIndex.getValueInfo(GUID).name();
    if (!Name.empty())
      Names.push_back(
          {Name, GUID, !CombinedIndex.cfiFunctionDefs().forGuid(GUID).empty()});
  }
  return Names;
}

static Error objectError(MemoryBufferRef Object, const Twine &Problem) {
  return createStringError(inconvertibleErrorCode(), "'" +
                               Object.getBufferIdentifier() + "' " + Problem);
}

Error checkObject(MemoryBufferRef Object, const Triple &TT,
                  ArrayRef<RequiredSymbol> Required) {
  if (Object.getBufferSize() == 0)
    return objectError(Object, "is empty");
  Expected<std::unique_ptr<object::ObjectFile>> ObjOrErr =
      object::ObjectFile::createObjectFile(Object);
  if (!ObjOrErr)
    return objectError(Object, "is not a valid object file: " +
                                   toString(ObjOrErr.takeError()));
  object::ObjectFile &Obj = **ObjOrErr;
  Triple ObjTT = Obj.makeTriple();
  bool FormatMatches = (TT.isOSBinFormatELF() && Obj.isELF()) ||
                       (TT.isOSBinFormatCOFF() && Obj.isCOFF()) ||
                       (TT.isOSBinFormatMachO() && Obj.isMachO()) ||
                       (TT.isOSBinFormatWasm() && Obj.isWasm());
  if (!FormatMatches || ObjTT.getArch() != TT.getArch())
    return objectError(Object, "is an object of format " +
                                   Obj.getFileFormatName() +
                                   ", but the link targets " + TT.str());

  if (Required.empty())
    return Error::success();
  StringSet<> Defined;
  for (const object::SymbolRef &Sym : Obj.symbols()) {
    Expected<uint32_t> Flags = Sym.getFlags();
    if (!Flags) {
      consumeError(Flags.takeError());
      continue;
    }
    if ((*Flags & object::SymbolRef::SF_Undefined) ||
        !(*Flags & (object::SymbolRef::SF_Global | object::SymbolRef::SF_Weak)))
      continue;
    Expected<StringRef> Name = Sym.getName();
    if (!Name) {
      consumeError(Name.takeError());
      continue;
    }
    Defined.insert(*Name);
  }
  // 32-bit x86 COFF and Mach-O put a '_' in front of C names.
  bool UnderscorePrefix =
      TT.isOSBinFormatMachO() ||
      (TT.isOSBinFormatCOFF() && TT.getArch() == Triple::x86);
  std::vector<StringRef> Missing;
  for (const RequiredSymbol &R : Required) {
    StringRef Name = GlobalValue::dropLLVMManglingEscape(R.Name);
    if (Defined.contains(Name) ||
        (UnderscorePrefix && Defined.contains(("_" + Name).str())) ||
        (R.CfiRenamed && Defined.contains((Name + ".cfi").str())))
      continue;
    // Promoted locals have external linkage by now, but the index keeps
    // their source name, not the promoted symbol's. A name hashes to its
    // GUID only for a real global; hashing only what is missing keeps the
    // check cheap.
    if (GlobalValue::getGUIDAssumingExternalLinkage(R.Name) != R.GUID)
      continue;
    Missing.push_back(Name);
  }
  if (Missing.empty())
    return Error::success();
  // Only now: how many real globals the module had to define.
  size_t Checked = count_if(Required, [](const RequiredSymbol &R) {
    return GlobalValue::getGUIDAssumingExternalLinkage(R.Name) == R.GUID;
  });
  std::string List;
  for (size_t I = 0; I < Missing.size() && I < 3; ++I)
    List += (I ? ", '" : "'") + Missing[I].str() + "'";
  if (Missing.size() > 3)
    List += " and " + std::to_string(Missing.size() - 3) + " more";
  return objectError(Object,
                     "lacks " + Twine(Missing.size()) + " of the " +
                         Twine(Checked) +
                         " definitions its module must provide (" + List +
                         "); the remote compiler probably failed to load an "
                         "input and still exited 0");
}

} // namespace dtlto
