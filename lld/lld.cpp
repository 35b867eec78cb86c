//===- lld.cpp - LLD with the dtlto engine --------------------------------===//
//
// LLD's ELF, COFF and MinGW drivers, from Debian's LLD 22 static libraries.
// This executable also defines llvm::lto::createOutOfProcessThinBackend and
// llvm::lto::DTLTO's members (llvm/lib/LTO, llvm/lib/DTLTO), and the
// executable's definitions win over libLLVM's: LLD's own DTLTO options reach
// our engine. LLD picks its flavour from the name it is run by: ld.lld,
// lld-link, or `lld -flavor <gnu|link>`.
//
//===----------------------------------------------------------------------===//

#include "lld/Common/Driver.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"
#include <string>

LLD_HAS_DRIVER(elf)
LLD_HAS_DRIVER(coff)
LLD_HAS_DRIVER(mingw)

// Replaces liblldCommon's definition, so that `ld.lld --version` tells which
// DTLTO engine is inside. "LLD" stays in the string: build systems (meson,
// CMake) look for it to recognise the linker.
namespace lld {
std::string getLLDVersion() {
  return "dtlto LLD " LLVM_VERSION_STRING " (dtlto " DTLTO_VERSION
         " DTLTO engine; Debian LLVM libraries)";
}
} // namespace lld

int main(int argc, const char **argv) {
  llvm::InitLLVM X(argc, argv);
  lld::Result R = lld::lldMain(llvm::ArrayRef(argv, argc), llvm::outs(),
                               llvm::errs(),
                               {{lld::WinLink, &lld::coff::link},
                                {lld::Gnu, &lld::elf::link},
                                {lld::MinGW, &lld::mingw::link}});
  return R.retCode;
}
