//===- Manifest.cpp - The JSON job manifest handed to a distributor -------===//

#include "dtlto/Manifest.h"

#include "llvm/LTO/Config.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace dtlto {

CommonPart makeCommonPart(const lto::Config &Conf, const Triple &TT,
                          StringRef LinkerOutput, StringRef RemoteCompiler,
                          ArrayRef<std::string> PrependArgs,
                          ArrayRef<std::string> CompilerArgs) {
  CommonPart C;
  C.LinkerOutput = std::string(LinkerOutput);
  std::vector<std::string> &A = C.Args;
  A.push_back(std::string(RemoteCompiler));
  A.insert(A.end(), PrependArgs.begin(), PrependArgs.end());
  A.push_back("-c");
  A.push_back("--target=" + TT.str());
  A.push_back("-O" + std::to_string(Conf.OptLevel));
  if (Conf.Options.EmitAddrsig)
    A.push_back("-faddrsig");
  if (Conf.Options.FunctionSections)
    A.push_back("-ffunction-sections");
  if (Conf.Options.DataSections)
    A.push_back("-fdata-sections");
  // COFF code is position independent by construction; clang rejects -fpic
  // for it.
  if (Conf.RelocModel == Reloc::PIC_ && !TT.isOSBinFormatCOFF())
    A.push_back("-fpic");
  if (!Conf.SampleProfile.empty()) {
    A.push_back("-fprofile-sample-use=" + Conf.SampleProfile);
    C.Inputs.push_back(Conf.SampleProfile);
  }
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

Error writeManifest(StringRef Path, const CommonPart &Common,
                    ArrayRef<const Job *> Jobs) {
  std::error_code EC;
  raw_fd_ostream OS(Path, EC, sys::fs::OF_Text);
  if (EC)
    return createStringError(EC, "cannot write the DTLTO job manifest '" +
                                     Path + "': " + EC.message());
  json::OStream J(OS, /*IndentSize=*/1);
  J.object([&] {
    J.attributeObject("common", [&] {
      J.attribute("linker_output", Common.LinkerOutput);
      writeStrings(J, "args", Common.Args);
      writeStrings(J, "inputs", Common.Inputs);
    });
    J.attributeArray("jobs", [&] {
      for (const Job *Jb : Jobs) {
        J.object([&] {
          J.attributeArray("args", [&] {
            J.value(Jb->ModuleID);
            J.value("-fthinlto-index=" + Jb->ShardPath);
            J.value("-o");
            J.value(Jb->ObjectPath);
          });
          J.attributeArray("inputs", [&] {
            J.value(Jb->ModuleID);
            J.value(Jb->ShardPath);
            for (const std::string &M : Jb->ImportedFrom)
              J.value(M);
          });
          writeStrings(J, "outputs", {Jb->ObjectPath});
          // Extension: lets a scheduler balance load without stat()ing.
          J.attribute("input_bytes", int64_t(Jb->InputBytes));
        });
      }
    });
    // Extension: which engine wrote this manifest.
    J.attributeObject("dtlto", [&] {
      J.attribute("engine", "dtlto");
      J.attribute("version", DTLTO_VERSION);
    });
  });
  OS << "\n";
  OS.close();
  if (OS.has_error()) {
    EC = OS.error();
    OS.clear_error();
    return createStringError(EC, "cannot write the DTLTO job manifest '" +
                                     Path + "': " + EC.message());
  }
  return Error::success();
}

} // namespace dtlto
