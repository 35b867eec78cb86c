//===- ObjectCheck.cpp - Trust, but verify, what a distributor returns ----===//

#include "dtlto/ObjectCheck.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/Endian.h"

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
  return createStringError(inconvertibleErrorCode(),
                           "'" + Object.getBufferIdentifier() + "' " + Problem);
}

static Error broken(const Twine &What) {
  return createStringError(inconvertibleErrorCode(), What);
}

// Every .eh_frame record must fit in its section, and every FDE must point
// back at a CIE before it: LLD walks the records by length and follows those
// pointers.
static Error checkEhFrame(ArrayRef<uint8_t> Data, llvm::endianness E) {
  DenseSet<uint64_t> CIEs;
  uint64_t Off = 0;
  while (Off < Data.size()) {
    if (Data.size() - Off < 4)
      return broken("a truncated .eh_frame record");
    uint32_t Len = support::endian::read32(Data.data() + Off, E);
    if (Len == 0) // the terminator
      return Error::success();
    if (Len == 0xffffffff || Len < 4 || Len > Data.size() - Off - 4)
      return broken(".eh_frame record length " + Twine(Len) +
                    " runs past its section");
    // 0 marks a CIE; anything else is an FDE's distance back to its CIE.
    uint32_t Id = support::endian::read32(Data.data() + Off + 4, E);
    if (Id == 0)
      CIEs.insert(Off);
    else if (Id > Off + 4 || !CIEs.contains(Off + 4 - Id))
      return broken("an .eh_frame FDE at offset " + Twine(Off) +
                    " whose CIE pointer leads to no CIE");
    Off += 4 + uint64_t(Len);
  }
  return Error::success();
}

// The structure LLD relies on without checking every part of it (damaged
// objects have been seen to crash it, make it loop or refuse the link):
// - a relocatable object; the section table and each section's contents
//   within the file;
// - alignments that are powers of 2 up to 4 GiB; section types LLVM knows
//   and relocatable objects have; thread-local sections that are data;
//   mergeable sections that split into whole pieces and end in a terminator;
// - each symbol's name within its string table, a known binding on the
//   right side of the locals' end, its section within the section table and
//   its value within its section;
// - each relocation's symbol within the symbol table and its place within
//   its section; each group's members; each .eh_frame record within bounds,
//   each FDE pointing at a CIE.
// What the bytes of code and data say is beyond any check.
template <class ELFT>
static Error checkELFStructure(const object::ELFFile<ELFT> &F) {
  using namespace ELF;
  // What comes back from a job is a relocatable object; LLD would take an
  // ET_DYN for a shared library.
  if (F.getHeader().e_type != ET_REL)
    return broken("an ELF file of type " + Twine(F.getHeader().e_type) +
                  ", not a relocatable object");
  auto Sections = F.sections();
  if (!Sections)
    return Sections.takeError();
  size_t NumSections = Sections->size();
  for (const typename ELFT::Shdr &Sec : *Sections) {
    // Clang aligns to at most 4 GiB; more is a flipped bit that moves the
    // section out of reach of its relocations.
    if ((Sec.sh_addralign & (Sec.sh_addralign - 1)) ||
        uint64_t(Sec.sh_addralign) > (uint64_t(1) << 32))
      return broken("a section aligned to " +
                    Twine(uint64_t(Sec.sh_addralign)) +
                    ", not a power of 2 up to 4 GiB");
    // A type no LLVM tool can name is a flipped bit; LLD would put such a
    // section in the output or refuse the link.
    if (object::getELFSectionTypeName(F.getHeader().e_machine, Sec.sh_type) ==
        "Unknown")
      return broken("a section of unknown type " +
                    Twine::utohexstr(Sec.sh_type));
    switch (Sec.sh_type) {
    case SHT_HASH:
    case SHT_DYNAMIC:
    case SHT_DYNSYM:
    case SHT_RELR:
    case SHT_GNU_HASH:
    case SHT_GNU_verdef:
    case SHT_GNU_verneed:
    case SHT_GNU_versym:
      return broken(
          "a section of type " +
          object::getELFSectionTypeName(F.getHeader().e_machine, Sec.sh_type) +
          ", which only linked files have");
    default:
      break;
    }
    // Thread-local storage is data; LLD refuses to merge TLS code with the
    // rest of the output's code.
    if ((Sec.sh_flags & SHF_TLS) &&
        ((Sec.sh_flags & SHF_EXECINSTR) || !(Sec.sh_flags & SHF_ALLOC)))
      return broken("a thread-local section that is code or not loaded");
    if (Sec.sh_type != SHT_NOBITS)
      if (Expected<ArrayRef<uint8_t>> C = F.getSectionContents(Sec); !C)
        return C.takeError();
    // LLD splits mergeable sections into pieces of sh_entsize bytes (0: not
    // merged at all), and strings at their terminators; a wrong size or an
    // unterminated string crashes it.
    if (Sec.sh_flags & SHF_MERGE && Sec.sh_entsize &&
        Sec.sh_type != SHT_NOBITS) {
      uint64_t Size = Sec.sh_size, EntSize = Sec.sh_entsize;
      if (Size % EntSize)
        return broken("a mergeable section of " + Twine(Size) +
                      " bytes in pieces of " + Twine(EntSize));
      if (Sec.sh_flags & SHF_STRINGS) {
        ArrayRef<uint8_t> Data = cantFail(F.getSectionContents(Sec));
        if (EntSize > 8 || (EntSize & (EntSize - 1)))
          return broken("a string section with characters of " +
                        Twine(EntSize) + " bytes");
        if (Size &&
            any_of(Data.take_back(EntSize), [](uint8_t B) { return B != 0; }))
          return broken("a string section whose last string is not "
                        "terminated");
      }
    }
    switch (Sec.sh_type) {
    case SHT_SYMTAB: {
      auto Syms = F.symbols(&Sec);
      if (!Syms)
        return Syms.takeError();
      Expected<StringRef> Strtab = F.getStringTableForSymtab(Sec);
      if (!Strtab)
        return Strtab.takeError();
      // Locals come first, up to sh_info; LLD relies on the split.
      if (Sec.sh_info > Syms->size())
        return broken("a symbol table whose first global, " +
                      Twine(uint64_t(Sec.sh_info)) + ", is past its " +
                      Twine(Syms->size()) + " symbols");
      for (size_t I = 0; I < Syms->size(); ++I) {
        const typename ELFT::Sym &Sym = (*Syms)[I];
        if (Expected<StringRef> Name = Sym.getName(*Strtab); !Name)
          return Name.takeError();
        unsigned Binding = Sym.getBinding();
        if (Binding != STB_LOCAL && Binding != STB_GLOBAL &&
            Binding != STB_WEAK && Binding != STB_GNU_UNIQUE)
          return broken("symbol " + Twine(I) + " with binding " +
                        Twine(Binding));
        if ((Binding == STB_LOCAL) != (I < Sec.sh_info))
          return broken("symbol " + Twine(I) +
                        (Binding == STB_LOCAL ? " is local, after "
                                              : " is global, among ") +
                        "the locals (sh_info " + Twine(uint64_t(Sec.sh_info)) +
                        ")");
        uint16_t Index = Sym.st_shndx;
        if (Index == SHN_UNDEF || Index >= SHN_LORESERVE)
          continue;
        if (Index >= NumSections)
          return broken("a symbol in section " + Twine(Index) + " of " +
                        Twine(NumSections));
        // A symbol's value is its offset in its section (a relocation
        // against it reaches that far).
        uint64_t Size = (*Sections)[Index].sh_size;
        if (uint64_t(Sym.st_value) > Size)
          return broken("a symbol at offset " + Twine(uint64_t(Sym.st_value)) +
                        " of a section of " + Twine(Size) + " bytes");
      }
      break;
    }
    case SHT_RELA:
    case SHT_REL: {
      if (Sec.sh_link >= NumSections || Sec.sh_info >= NumSections)
        return broken("a relocation section with no symbol table or target");
      const typename ELFT::Shdr &Symtab = (*Sections)[Sec.sh_link];
      const typename ELFT::Shdr &Target = (*Sections)[Sec.sh_info];
      uint64_t NumSyms =
          Symtab.sh_entsize ? Symtab.sh_size / Symtab.sh_entsize : 0;
      uint64_t Size = Target.sh_size;
      auto Check = [&](uint32_t Sym, uint64_t Offset) -> Error {
        if (Sym >= NumSyms)
          return broken("a relocation against symbol " + Twine(Sym) + " of " +
                        Twine(NumSyms));
        if (Offset >= Size)
          return broken("a relocation at offset " + Twine(Offset) +
                        " of a section of " + Twine(Size) + " bytes");
        return Error::success();
      };
      if (Sec.sh_type == SHT_RELA) {
        auto Relas = F.relas(Sec);
        if (!Relas)
          return Relas.takeError();
        for (const typename ELFT::Rela &R : *Relas)
          if (Error E = Check(R.getSymbol(false), R.r_offset))
            return E;
      } else {
        auto Rels = F.rels(Sec);
        if (!Rels)
          return Rels.takeError();
        for (const typename ELFT::Rel &R : *Rels)
          if (Error E = Check(R.getSymbol(false), R.r_offset))
            return E;
      }
      break;
    }
    case SHT_GROUP: {
      auto Words =
          F.template getSectionContentsAsArray<typename ELFT::Word>(Sec);
      if (!Words)
        return Words.takeError();
      for (size_t I = 1; I < Words->size(); ++I)
        if ((*Words)[I] >= NumSections)
          return broken("a section group member " + Twine((*Words)[I]) +
                        " of " + Twine(NumSections) + " sections");
      break;
    }
    default:
      break;
    }
    Expected<StringRef> Name = F.getSectionName(Sec);
    if (!Name)
      return Name.takeError();
    if (*Name == ".eh_frame" && Sec.sh_type != SHT_NOBITS)
      if (Error E = checkEhFrame(cantFail(F.getSectionContents(Sec)),
                                 ELFT::Endianness))
        return E;
  }
  return Error::success();
}

static Error checkStructure(const object::ObjectFile &Obj) {
  if (const auto *O = dyn_cast<object::ELF64LEObjectFile>(&Obj))
    return checkELFStructure(O->getELFFile());
  if (const auto *O = dyn_cast<object::ELF32LEObjectFile>(&Obj))
    return checkELFStructure(O->getELFFile());
  if (const auto *O = dyn_cast<object::ELF64BEObjectFile>(&Obj))
    return checkELFStructure(O->getELFFile());
  if (const auto *O = dyn_cast<object::ELF32BEObjectFile>(&Obj))
    return checkELFStructure(O->getELFFile());
  return Error::success();
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
  if (Error E = checkStructure(Obj))
    return objectError(Object,
                       "is a damaged object: " + toString(std::move(E)));

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
  return objectError(
      Object, "lacks " + Twine(Missing.size()) + " of the " + Twine(Checked) +
                  " definitions its module must provide (" + List +
                  "); the remote compiler probably failed to load an "
                  "input and still exited 0");
}

} // namespace dtlto
