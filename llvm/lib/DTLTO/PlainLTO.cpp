//===- PlainLTO.cpp - DTLTO for linkers that make a plain lto::LTO --------===//
//
// ld64.lld, wasm-ld and LLVMgold.so (ld.bfd, ld.gold, mold) have no DTLTO:
// they make an lto::LTO with LLVM's in-process ThinLTO backend. Their calls
// of three LLVM functions come here instead, from our executables (whose
// definitions win over libLLVM's) and from any process the preload library
// is in (it is loaded first, so its definitions win there):
//
//   createInProcessThinBackend  with a distributor set (DistributionOptions.h)
//                               our out-of-process backend, else LLVM's;
//   LTO::add                    with a distributor set, the input first gets
//                               a module ID a remote job can load
//                               (InputPreparation.h): these linkers name
//                               archive members "lib.a(m.o)120", and
//                               LLVMgold.so "lib.a.llvm.120.m.o", which no
//                               job could open;
//   LTO::run                    then forgets the link's prepared inputs;
//                               for every linker, it also marks where the
//                               thin link begins and the final link begins,
//                               for the link report (LinkReport.h), and
//                               gives the memory LTO freed back to the
//                               system before the final link;
//   timeTraceProfilerWrite      tells the link report which --time-trace
//                               file LLD wrote, to merge LLD's scopes.
//
// Each calls LLVM's own function, found in libLLVM by name. An LTO made by
// LLD's ELF or COFF driver for a DTLTO link (an lto::DTLTO) passes through
// untouched: its inputs are prepared by DTLTO::addInput.
//
//===----------------------------------------------------------------------===//

#include "dtlto/DistributionOptions.h"
#include "dtlto/InputPreparation.h"
#include "dtlto/LinkReport.h"
#include "dtlto/PreparedInputs.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/LTO/LTO.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/StringSaver.h"
#include "llvm/Support/TimeProfiler.h"
#include <dlfcn.h>
#include <malloc.h>
#include <mutex>

using namespace llvm;
using namespace llvm::lto;
using namespace dtlto;

// LLVM's definition of a function we define too: looked up in libLLVM
// itself (found through a function of its that we do not define), which
// works whether libLLVM is in the global scope (LLD) or only in a plugin's
// (LLVMgold.so, dlopened RTLD_LOCAL by gold and bfd).
static void *llvmFunction(const char *MangledName) {
  static void *LibLLVM = [] {
    Dl_info Info;
    if (!dladdr(reinterpret_cast<void *>(&InputFile::create), &Info))
      return static_cast<void *>(nullptr);
    return dlopen(Info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  }();
  void *F = LibLLVM ? dlsym(LibLLVM, MangledName) : nullptr;
  if (!F)
    report_fatal_error(Twine("dtlto: cannot find LLVM's ") + MangledName +
                       " in libLLVM");
  return F;
}

// A member function called through a plain function pointer takes `this`
// first (the Itanium C++ ABI).
using InProcessFn = ThinBackend (*)(ThreadPoolStrategy, IndexWriteCallback,
                                    bool, bool);
using AddFn = Error (*)(LTO *, std::unique_ptr<InputFile>,
                        ArrayRef<SymbolResolution>);
using RunFn = Error (*)(LTO *, AddStreamFn, FileCache);

namespace {
/// The inputs of the plain-LTO link in this process, while it adds them.
struct PlainLink {
  std::mutex Mu;
  unsigned Inputs = 0;
  StringSet<> IDs;
  BumpPtrAllocator Alloc;
  StringSaver Saver{Alloc};
};
} // namespace

static PlainLink &plainLink() {
  static PlainLink L;
  return L;
}

ThinBackend lto::createInProcessThinBackend(ThreadPoolStrategy Parallelism,
                                            IndexWriteCallback OnWrite,
                                            bool ShouldEmitIndexFiles,
                                            bool ShouldEmitImportsFiles) {
  const DistributionOptions *D = distributionOptions();
  if (!D) {
    static auto Real = reinterpret_cast<InProcessFn>(llvmFunction(
        "_ZN4llvm3lto26createInProcessThinBackendENS_18ThreadPoolStrategyESt8"
        "functionIFvRKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEEEEb"
        "b"));
    return Real(Parallelism, std::move(OnWrite), ShouldEmitIndexFiles,
                ShouldEmitImportsFiles);
  }
  auto Refs = [](const std::vector<std::string> &V) {
    return std::vector<StringRef>(V.begin(), V.end());
  };
  std::vector<StringRef> DistributorArgs = Refs(D->DistributorArgs);
  std::vector<StringRef> Prepend = Refs(D->RemoteCompilerPrependArgs);
  std::vector<StringRef> CompilerArgs = Refs(D->RemoteCompilerArgs);
  return createOutOfProcessThinBackend(
      Parallelism, std::move(OnWrite), ShouldEmitIndexFiles,
      ShouldEmitImportsFiles, D->LinkerOutput, D->Distributor, DistributorArgs,
      D->RemoteCompiler, Prepend, CompilerArgs, D->SaveTemps);
}

Error LTO::add(std::unique_ptr<InputFile> Obj, ArrayRef<SymbolResolution> Res) {
  static auto Real = reinterpret_cast<AddFn>(
      llvmFunction("_ZN4llvm3lto3LTO3addESt10unique_ptrINS0_9InputFileESt14"
                   "default_deleteIS3_EENS_8ArrayRefINS0_16SymbolResolutionEEE"));
  const DistributionOptions *D = distributionOptions();
  if (D) {
    PlainLink &L = plainLink();
    std::lock_guard<std::mutex> Lock(L.Mu);
    InputContext C;
    C.LinkerOutputFile = D->LinkerOutput;
    C.InputNumber = ++L.Inputs;
    C.LinkerNamesMembers = false;
    auto IDTaken = [&](StringRef ID) { return L.IDs.contains(ID); };
    C.IDTaken = IDTaken;
    Expected<std::string> NewID = prepareInput(*Obj, C);
    if (!NewID)
      return NewID.takeError();
    BitcodeModule &BM = Obj->getPrimaryBitcodeModule();
    if (!NewID->empty())
      BM.setModuleIdentifier(L.Saver.save(*NewID));
    L.IDs.insert(BM.getModuleIdentifier());
  }
  return Real(this, std::move(Obj), Res);
}

Error LTO::run(AddStreamFn AddStream, FileCache Cache) {
  static auto Real = reinterpret_cast<RunFn>(
      llvmFunction("_ZN4llvm3lto3LTO3runESt8functionIFNS_8ExpectedISt10unique_"
                   "ptrINS_16CachedFileStreamESt14default_deleteIS5_EEEEjRKNS_"
                   "5TwineEEENS_9FileCacheE"));
  LinkReport::ltoStarted();
  Error E = Real(this, std::move(AddStream), std::move(Cache));
  LinkReport::ltoEnded();
  // The thin link's and the backend's memory is free now, in holes between
  // the objects the link keeps; malloc keeps such pages. Given back, the
  // final link's allocations (LLD's slabs, the output's mapping) do not
  // come on top of them: the linker's peak RSS at 10,000 modules drops
  // below in-process ThinLTO's (docs/performance.md, "Memory at scale":
  // 46 MiB given back there). Giving back costs a system call per hole and
  // a page fault per page used again, for no peak worth having when little
  // is free (8 MiB at 1,000 modules).
  constexpr size_t TrimFrom = 32u << 20;
  if (mallinfo2().fordblks >= TrimFrom)
    malloc_trim(0);
  if (distributionOptions()) {
    PlainLink &L = plainLink();
    std::lock_guard<std::mutex> Lock(L.Mu);
    forgetPreparedInputs();
    L.IDs.clear();
    L.Inputs = 0;
  }
  return E;
}

// LLD writes --time-trace through this (ELF, COFF, Mach-O and wasm alike),
// after the link: the file is the one LLVM names, as LLVM names it.
Error llvm::timeTraceProfilerWrite(StringRef PreferredFileName,
                                   StringRef FallbackFileName) {
  using WriteFn = Error (*)(StringRef, StringRef);
  static auto Real = reinterpret_cast<WriteFn>(
      llvmFunction("_ZN4llvm22timeTraceProfilerWriteENS_9StringRefES0_"));
  Error E = Real(PreferredFileName, FallbackFileName);
  if (!E) {
    std::string Path = PreferredFileName.str();
    if (Path.empty())
      Path = (FallbackFileName == "-" ? "out" : FallbackFileName.str()) +
             ".time-trace";
    LinkReport::timeTraceWritten(Path);
  }
  return E;
}
