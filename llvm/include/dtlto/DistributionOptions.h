//===- DistributionOptions.h - DTLTO for linkers without DTLTO options ----===//
//
// LLD's ELF and COFF drivers have DTLTO options and make an lto::DTLTO with
// our out-of-process backend. The other linkers that use LLVM's LTO library
// do not: ld64.lld (Mach-O) and wasm-ld make a plain lto::LTO with LLVM's
// in-process ThinLTO backend, and so does LLVMgold.so (ld.bfd, ld.gold,
// mold). For them, the same settings come from one of two places:
//
//   - our executables (build/bin/ld64.lld, build/bin/wasm-ld): the linker's
//     own command line, where LLD's ELF spellings (--thinlto-distributor=,
//     --thinlto-distributor-arg=, --thinlto-remote-compiler=,
//     --thinlto-remote-compiler-arg=, --thinlto-remote-compiler-prepend-arg=)
//     are taken out before the driver sees them (takeFromCommandLine);
//   - any process our library is in (the preload library in Debian's stock
//     linkers): LLVM options of the same names, -mllvm -thinlto-distributor=
//     for LLD, -plugin-opt=-thinlto-distributor= for LLVMgold.so. The link's
//     output and --save-temps are then read from the process's command line.
//
// With a distributor set, PlainLTO.cpp turns such a link's in-process
// ThinLTO backend into ours and prepares its inputs (InputPreparation.h).
//
//===----------------------------------------------------------------------===//

#ifndef DTLTO_DISTRIBUTIONOPTIONS_H
#define DTLTO_DISTRIBUTIONOPTIONS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include <string>
#include <vector>

namespace dtlto {

struct DistributionOptions {
  std::string Distributor;
  std::vector<std::string> DistributorArgs;
  std::string RemoteCompiler;
  std::vector<std::string> RemoteCompilerPrependArgs;
  std::vector<std::string> RemoteCompilerArgs;
  std::string LinkerOutput; // the link's output file
  bool SaveTemps = false;
};

/// Which DTLTO option (LLD's spelling, without dashes) Arg is, with its value
/// in Value: "thinlto-distributor" for "--thinlto-distributor=x" or
/// "-thinlto-distributor=x"; "" when it is none of them.
llvm::StringRef parseDistributionOption(llvm::StringRef Arg,
                                        llvm::StringRef &Value);

/// Takes the DTLTO options out of Args (an argv whose response files are
/// expanded) and makes them the process's distribution options. The output
/// is Args' "-o <file>" (a.out without one), SaveTemps its --save-temps.
void takeFromCommandLine(std::vector<const char *> &Args);

/// The distribution options of this process, or null when no distributor was
/// given, through either place.
const DistributionOptions *distributionOptions();

/// The output file and --save-temps of a linker command line (response files
/// expanded): "-o <f>", "--output=<f>", "--output <f>".
std::string outputFromCommandLine(llvm::ArrayRef<std::string> Args);
bool saveTempsFromCommandLine(llvm::ArrayRef<std::string> Args);

} // namespace dtlto

#endif
