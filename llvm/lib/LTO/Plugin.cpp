//===- Plugin.cpp - Distributor plugins, as the engine sees them ----------===//
//
// A plugin is recognised by what the file holds, not by its name: an ELF
// shared object that exports dtlto_plugin_entry. A PIE executable is ELF
// ET_DYN too, but has an interpreter and no entry point: it is a distributor
// program. The checks here read the file; they run none of its code (the
// host loads it: in a process of its own, or with -dtlto-plugin-in-process
// on a thread of the linker).
//
//===----------------------------------------------------------------------===//

#include "dtlto/Plugin.h"
#include "dtlto/Installed.h"
#include "dtlto/Options.h"
#include "dtlto/dtlto-plugin.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace llvm;

namespace dtlto {

StringRef builtinPluginNames() { return "local"; }

static Error fail(const Twine &Msg) {
  return createStringError(inconvertibleErrorCode(), Msg);
}

namespace {
enum class FileKind { NotElf, Program, SharedObject, Plugin };
} // namespace

static Expected<FileKind> classify(StringRef Path) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> Buf = MemoryBuffer::getFile(
      Path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!Buf)
    return fail("cannot read '" + Path + "': " + Buf.getError().message());
  StringRef Data = (*Buf)->getBuffer();
  if (!Data.starts_with("\x7f"
                        "ELF"))
    return FileKind::NotElf;
  Expected<std::unique_ptr<object::ObjectFile>> Obj =
      object::ObjectFile::createObjectFile((*Buf)->getMemBufferRef());
  if (!Obj) {
    consumeError(Obj.takeError());
    return FileKind::NotElf;
  }
  auto *Elf = dyn_cast<object::ELFObjectFileBase>(Obj->get());
  if (!Elf)
    return FileKind::NotElf;
  if (Elf->getEType() != ELF::ET_DYN)
    return FileKind::Program;
  for (const object::ELFSymbolRef &Sym : Elf->getDynamicSymbolIterators()) {
    Expected<StringRef> Name = Sym.getName();
    if (!Name) {
      consumeError(Name.takeError());
      continue;
    }
    Expected<uint32_t> Flags = Sym.getFlags();
    bool Defined = Flags && !(*Flags & object::SymbolRef::SF_Undefined);
    if (!Flags)
      consumeError(Flags.takeError());
    if (*Name == DTLTO_PLUGIN_ENTRY_SYMBOL && Defined)
      return FileKind::Plugin;
  }
  // Shared objects have no interpreter; PIE executables do.
  if (auto *E64 = dyn_cast<object::ELF64LEObjectFile>(Elf)) {
    auto Phdrs = E64->getELFFile().program_headers();
    if (!Phdrs) {
      consumeError(Phdrs.takeError());
      return FileKind::SharedObject;
    }
    for (const auto &P : *Phdrs)
      if (P.p_type == ELF::PT_INTERP)
        return FileKind::Program;
  }
  return FileKind::SharedObject;
}

static bool looksLikeSharedObjectName(StringRef Path) {
  StringRef Name = sys::path::filename(Path);
  return Name.ends_with(".so") || Name.contains(".so.");
}

Expected<std::optional<PluginChoice>> findPlugin(StringRef Distributor) {
  PluginChoice C;
  if (Distributor.starts_with("builtin:")) {
    StringRef Name = Distributor.drop_front(strlen("builtin:"));
    SmallVector<StringRef, 4> Known;
    builtinPluginNames().split(Known, ' ');
    if (!is_contained(Known, Name))
      return fail("'" + Distributor +
                  "' is no built-in DTLTO distributor plugin; the built-in "
                  "ones are: builtin:" +
                  builtinPluginNames() + " (docs/plugins.md)");
    C.Plugin = Distributor.str();
  } else {
    // A bare name is a program to look up in PATH, as before.
    if (!sys::fs::is_regular_file(Distributor) ||
        (!sys::path::has_parent_path(Distributor) &&
         !looksLikeSharedObjectName(Distributor)))
      return std::nullopt;
    Expected<FileKind> Kind = classify(Distributor);
    if (!Kind)
      return Kind.takeError();
    bool SoName = looksLikeSharedObjectName(Distributor);
    switch (*Kind) {
    case FileKind::Program:
      return std::nullopt;
    case FileKind::NotElf:
      if (!SoName)
        return std::nullopt; // a script
      return fail("the DTLTO distributor '" + Distributor +
                  "' is named like a plugin but is not an ELF shared "
                  "object; build it with -shared -fPIC (docs/plugins.md), "
                  "or name a distributor program");
    case FileKind::SharedObject:
      return fail("the DTLTO distributor '" + Distributor +
                  "' is a shared object but not a DTLTO distributor plugin: "
                  "it does not export '" DTLTO_PLUGIN_ENTRY_SYMBOL
                  "' (see dtlto-plugin.h and docs/plugins.md)");
    case FileKind::Plugin:
      break;
    }
    SmallString<256> Abs;
    if (sys::fs::real_path(Distributor, Abs)) {
      Abs = Distributor;
      sys::fs::make_absolute(Abs);
    }
    C.Plugin = std::string(Abs);
  }
  // A built-in plugin is the linker's own code, as the engine is: it runs
  // in the linker unless told otherwise, without a process start, a copy
  // of each job, or wake-ups between the two (docs/plugins.md). A shared
  // object may be anyone's: it runs in the host unless told otherwise.
  Expected<bool> InProcess =
      pluginInProcess(StringRef(C.Plugin).starts_with("builtin:"));
  if (!InProcess)
    return InProcess.takeError();
  C.InProcess = *InProcess;
  Expected<std::string> Self =
      enginePath(C.InProcess ? "dtlto-backend" : "dtlto-plugin-host");
  if (!Self)
    return Self.takeError();
  if (C.InProcess) {
    C.Backend = programBesideEngine(*Self, "dtlto-backend");
    return C;
  }
  C.Host = programBesideEngine(*Self, "dtlto-plugin-host");
  if (C.Host.empty())
    return fail("DTLTO distributor plugins run in dtlto-plugin-host, which "
                "is not installed next to '" +
                *Self +
                "'; reinstall dtlto, or load the plugin into the linker "
                "(-mllvm -dtlto-plugin-in-process)");
  return C;
}

} // namespace dtlto
