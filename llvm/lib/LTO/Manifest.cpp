//===- Manifest.cpp - The JSON job manifest handed to a distributor -------===//

#include "dtlto/Manifest.h"
#include "dtlto/Installed.h"
#include "dtlto/Options.h"
#include "dtlto/WriteFile.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/LTO/Config.h"
#include "llvm/Support/Compression.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace dtlto {

bool isNativeBackend(StringRef RemoteCompiler) {
  return sys::path::filename(RemoteCompiler).starts_with("dtlto-backend");
}

// Files the backend reads wherever the configuration names them.
static void addProfileInputs(const lto::Config &Conf, CommonPart &C) {
  for (const std::string *F :
       {&Conf.SampleProfile, &Conf.CSIRProfile, &Conf.ProfileRemapping})
    if (!F->empty())
      C.Inputs.push_back(*F);
}

// The options LLVM's codegen::RegisterCodeGenFlags adds to the tools that
// register it (LLD, llc, dtlto-backend), and clang does not: clang stops at
// any of them ("Unknown command line argument"). The linker has put what
// they say into its LTO configuration already (CPU, features, relocation
// model, target options), and the clang flags below carry that. The list is
// LLVM 22's, read off a program that registers the flags.
static bool isCodeGenToolOption(StringRef MllvmArg) {
  static const StringSet<> Names = {"addrsig",
                                    "align-loops",
                                    "basic-block-address-map",
                                    "basic-block-sections",
                                    "call-graph-section",
                                    "code-model",
                                    "data-sections",
                                    "debug-entry-values",
                                    "debugger-tune",
                                    "denormal-fp-math",
                                    "denormal-fp-math-f32",
                                    "disable-tail-calls",
                                    "emit-call-site-info",
                                    "emulated-tls",
                                    "enable-jmc-instrument",
                                    "enable-no-infs-fp-math",
                                    "enable-no-nans-fp-math",
                                    "enable-no-signed-zeros-fp-math",
                                    "enable-no-trapping-fp-math",
                                    "enable-sign-dependent-rounding-fp-math",
                                    "enable-tlsdesc",
                                    "exception-model",
                                    "filetype",
                                    "float-abi",
                                    "force-dwarf-frame-section",
                                    "fp-contract",
                                    "frame-pointer",
                                    "function-sections",
                                    "ignore-xcoff-visibility",
                                    "large-data-threshold",
                                    "march",
                                    "mattr",
                                    "mcpu",
                                    "meabi",
                                    "mxcoff-roptr",
                                    "no-integrated-as",
                                    "nozero-initialized-in-bss",
                                    "partition-static-data-sections",
                                    "relocation-model",
                                    "separate-named-sections",
                                    "split-machine-functions",
                                    "stack-size-section",
                                    "stack-symbol-ordering",
                                    "stackrealign",
                                    "strict-dwarf",
                                    "swift-async-fp",
                                    "tailcallopt",
                                    "thread-model",
                                    "tls-size",
                                    "trap-func",
                                    "unique-basic-block-section-names",
                                    "unique-section-names",
                                    "use-ctors",
                                    "vec-extabi",
                                    "vector-library",
                                    "xcoff-traceback-table",
                                    "xray-function-index"};
  StringRef Name = MllvmArg.ltrim('-').split('=').first;
  return Names.contains(Name);
}

// Whatever else of the linker's LTO configuration a clang flag can carry.
// What none can (a codegen level other than -O's, custom pass pipelines,
// basic block section lists) is listed in docs/equivalence.md.
static void addClangConfigFlags(const lto::Config &Conf, const Triple &TT,
                                CommonPart &C) {
  std::vector<std::string> &A = C.Args;
  auto CC1 = [&](StringRef Flag, StringRef Value) {
    A.insert(A.end(), {"-Xclang", Flag.str(), "-Xclang", Value.str()});
  };
  // clang's default relocation model is the toolchain's (PIE on Debian):
  // always say which. COFF code is position independent by construction and
  // clang rejects -fpic for it.
  if (!TT.isOSBinFormatCOFF() && Conf.RelocModel) {
    if (*Conf.RelocModel == Reloc::PIC_)
      A.push_back("-fpic");
    else if (*Conf.RelocModel == Reloc::Static)
      A.push_back("-fno-pic");
  }
  if (Conf.CodeModel) {
    static const char *const Names[] = {"tiny", "small", "kernel", "medium",
                                        "large"};
    A.push_back("-mcmodel=" + std::string(Names[int(*Conf.CodeModel)]));
  }
  if (!Conf.CPU.empty())
    CC1("-target-cpu", Conf.CPU);
  for (const std::string &Feature : Conf.MAttrs)
    CC1("-target-feature", Feature);
  // The optimisation pipeline's tuning. clang turns the vectorizers and
  // loop unrolling on at -O2 and above; the linker says what it wants (LLD's
  // ELF driver and LLVMgold.so do as clang does, its Mach-O driver leaves
  // both vectorizers off).
  bool ClangDefault = Conf.OptLevel > 1;
  const PipelineTuningOptions &PTO = Conf.PTO;
  if (PTO.LoopVectorization != ClangDefault)
    A.push_back(PTO.LoopVectorization ? "-fvectorize" : "-fno-vectorize");
  if (PTO.SLPVectorization != ClangDefault)
    A.push_back(PTO.SLPVectorization ? "-fslp-vectorize"
                                     : "-fno-slp-vectorize");
  if (PTO.LoopUnrolling != ClangDefault)
    A.push_back(PTO.LoopUnrolling ? "-funroll-loops" : "-fno-unroll-loops");
  if (PTO.MergeFunctions)
    A.insert(A.end(), {"-Xclang", "-fmerge-functions"});
  const TargetOptions &O = Conf.Options;
  if (O.EmulatedTLS)
    A.push_back("-femulated-tls");
  if (O.EnableTLSDESC && TT.isX86())
    A.push_back("-mtls-dialect=gnu2");
  if (!O.UniqueSectionNames)
    A.push_back("-fno-unique-section-names");
  if (O.BBAddrMap)
    A.push_back("-fbasic-block-address-map");
  if (O.BBSections == BasicBlockSection::All)
    A.push_back("-fbasic-block-sections=all");
  if (O.UniqueBasicBlockSectionNames)
    A.push_back("-funique-basic-block-section-names");
  if (O.EnableMachineFunctionSplitter)
    A.push_back("-fsplit-machine-functions");
  if (O.EmitStackSizeSection)
    A.push_back("-fstack-size-section");
  if (TT.isX86() && !O.MCOptions.X86RelaxRelocations)
    A.push_back("-Wa,-mrelax-relocations=no");
  if (O.MCOptions.CompressDebugSections == DebugCompressionType::Zlib)
    A.push_back("-gz=zlib");
  else if (O.MCOptions.CompressDebugSections == DebugCompressionType::Zstd)
    A.push_back("-gz=zstd");
  if (Conf.Freestanding)
    A.push_back("-ffreestanding");
  if (!Conf.SampleProfile.empty())
    A.push_back("-fprofile-sample-use=" + Conf.SampleProfile);
  if (!Conf.ProfileRemapping.empty())
    A.push_back("-fprofile-remapping-file=" + Conf.ProfileRemapping);
  // --no-lto-pgo-warn-mismatch: clang has no driver flag for it.
  if (!Conf.PGOWarnMismatch)
    A.insert(A.end(), {"-mllvm", "-no-pgo-warn-mismatch"});
  addProfileInputs(Conf, C);
  // The link's -mllvm options: LLVM 22's own engine drops them.
  for (const std::string &Opt : Conf.MllvmArgs)
    if (!isEngineOption(Opt) && !isCodeGenToolOption(Opt))
      A.insert(A.end(), {"-mllvm", Opt});
}

CommonPart makeCommonPart(const lto::Config &Conf, const Triple &TT,
                          StringRef LinkerOutput, StringRef RemoteCompiler,
                          ArrayRef<std::string> PrependArgs,
                          ArrayRef<std::string> CompilerArgs,
                          const NativeBackendFiles *Native) {
  CommonPart C;
  C.LinkerOutput = std::string(LinkerOutput);
  C.ForkServer = libraryBesideEngine("libdtlto-forkserver.so");
  std::vector<std::string> &A = C.Args;
  A.push_back(std::string(RemoteCompiler));
  A.insert(A.end(), PrependArgs.begin(), PrependArgs.end());

  if (Native) {
    // dtlto-backend needs no flags: it gets the configuration itself.
    A.push_back("--config=" + Native->Config);
    C.Inputs = {Native->Config};
    addProfileInputs(Conf, C);
    C.BatchArg = "--batch";
    A.insert(A.end(), CompilerArgs.begin(), CompilerArgs.end());
    return C;
  }

  A.push_back("-c");
  A.push_back("--target=" + TT.str());
  A.push_back("-O" + std::to_string(Conf.OptLevel));
  if (Conf.Options.EmitAddrsig)
    A.push_back("-faddrsig");
  if (Conf.Options.FunctionSections)
    A.push_back("-ffunction-sections");
  if (Conf.Options.DataSections)
    A.push_back("-fdata-sections");
  addClangConfigFlags(Conf, TT, C);
  // Our options are right for every job; clang must not warn when a job does
  // not use one of them.
  A.push_back("-Wno-unused-command-line-argument");
  A.insert(A.end(), CompilerArgs.begin(), CompilerArgs.end());
  return C;
}

static void writeStrings(json::OStream &J, StringRef Key,
                         ArrayRef<std::string> Strings) {
  J.attributeArray(Key, [&] {
    for (const std::string &S : Strings)
      J.value(S);
  });
}

void writeJobFields(json::OStream &J, const Job &Jb) {
  J.attributeArray("args", [&] {
    J.value(Jb.ModuleID);
    J.value("-fthinlto-index=" + Jb.ShardPath);
    J.value("-o");
    J.value(Jb.ObjectPath);
  });
  J.attributeArray("inputs", [&] {
    J.value(Jb.ModuleID);
    J.value(Jb.ShardPath);
    for (const std::string &M : Jb.ImportedFrom)
      J.value(M);
  });
  writeStrings(J, "outputs", {Jb.ObjectPath});
}

// Exactly LLVM 22's schema: distributors written for it check for exact
// keys. What else our distributors can use goes to the side file.
Error writeManifest(StringRef Path, const CommonPart &Common,
                    ArrayRef<const Job *> Jobs) {
  return writeFile(Path, "DTLTO job manifest", [&](raw_ostream &OS) {
    json::OStream J(OS, /*IndentSize=*/1);
    J.object([&] {
      J.attributeObject("common", [&] {
        J.attribute("linker_output", Common.LinkerOutput);
        writeStrings(J, "args", Common.Args);
        writeStrings(J, "inputs", Common.Inputs);
      });
      J.attributeArray("jobs", [&] {
        for (const Job *Jb : Jobs)
          J.object([&] { writeJobFields(J, *Jb); });
      });
    });
    OS << "\n";
  });
}

Error writeEngineInfo(StringRef Path, const CommonPart &Common,
                      ArrayRef<const Job *> Jobs, bool Streaming) {
  return writeFile(Path, "DTLTO engine side file", [&](raw_ostream &OS) {
    json::OStream J(OS, /*IndentSize=*/1);
    J.object([&] {
      J.attribute("engine", "dtlto");
      J.attribute("version", DTLTO_VERSION);
      J.attribute("jobs", int64_t(Jobs.size()));
      if (Streaming)
        J.attribute("stream", 1);
      if (!Common.BatchArg.empty())
        J.attribute("batch_arg", Common.BatchArg);
      if (!Common.ForkServer.empty())
        J.attribute("fork_server", Common.ForkServer);
      J.attributeArray("input_bytes", [&] {
        for (const Job *Jb : Jobs)
          J.value(int64_t(Jb->InputBytes));
      });
    });
    OS << "\n";
  });
}

} // namespace dtlto
