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

LLD_HAS_DRIVER(elf)
LLD_HAS_DRIVER(coff)
LLD_HAS_DRIVER(mingw)

// After LLD's own version line (which also goes into each output's .comment
// section, so it stays Debian's: our outputs match the stock linker's), say
// which DTLTO engine is inside. Build systems that recognise the linker by
// "LLD" on the first line are not disturbed.
static bool asksForVersion(llvm::ArrayRef<const char *> Args) {
  for (llvm::StringRef A : Args.drop_front())
    if (A == "--version" || A == "-version" || A == "-v" || A == "-V")
      return true;
  return false;
}

int main(int argc, const char **argv) {
  llvm::InitLLVM X(argc, argv);
  llvm::ArrayRef<const char *> Args(argv, argc);
  lld::Result R = lld::lldMain(Args, llvm::outs(), llvm::errs(),
                               {{lld::WinLink, &lld::coff::link},
                                {lld::Gnu, &lld::elf::link},
                                {lld::MinGW, &lld::mingw::link}});
  if (asksForVersion(Args))
    llvm::outs() << "with the dtlto " DTLTO_VERSION
                    " DTLTO engine, built on LLVM "
                 << LLVM_VERSION_STRING << "\n";
  return R.retCode;
}
