//===- lld.cpp - LLD with the dtlto engine --------------------------------===//
//
// LLD's drivers (ELF, COFF, MinGW, Mach-O, wasm) from Debian's LLD 22 static
// libraries, with our engine. This executable defines
// llvm::lto::createOutOfProcessThinBackend and llvm::lto::DTLTO's members
// (llvm/lib/LTO, llvm/lib/DTLTO), and the executable's definitions win over
// libLLVM's: LLD's own DTLTO options (ELF, COFF) reach our engine. The
// drivers without DTLTO options get them here:
//   - ld64.lld and wasm-ld: the options are taken off the command line
//     before the driver sees them (DistributionOptions.h), and PlainLTO.cpp
//     turns the link's in-process ThinLTO backend into ours;
//   - the MinGW driver (ld.lld -m i386pep ...): they become the COFF
//     linker's own (-Xlink=/thinlto-distributor:...).
// LLD picks its flavour from the name it is run by: ld.lld, lld-link,
// ld64.lld, wasm-ld, or `lld -flavor <gnu|link|darwin|wasm>`.
//
//===----------------------------------------------------------------------===//

#include "dtlto/DistributionOptions.h"

#include "lld/Common/Driver.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/StringSaver.h"
#include "llvm/Support/raw_ostream.h"

LLD_HAS_DRIVER(elf)
LLD_HAS_DRIVER(coff)
LLD_HAS_DRIVER(mingw)
LLD_HAS_DRIVER(macho)
LLD_HAS_DRIVER(wasm)

// LLD's entry point without crash recovery (liblldCommon; not in its public
// header). With ExitEarly the link ends in lld::exitLld: output flushed,
// llvm_shutdown() run, then _exit(), without destroying the link's data.
namespace lld {
int unsafeLldMain(llvm::ArrayRef<const char *> Args,
                  llvm::raw_ostream &StdoutOS, llvm::raw_ostream &StderrOS,
                  llvm::ArrayRef<DriverDef> Drivers, bool ExitEarly);
} // namespace lld

using namespace llvm;

// After LLD's own version line (which also goes into each output's .comment
// section, so it stays Debian's: our outputs match the stock linker's), say
// which DTLTO engine is inside. Build systems that recognise the linker by
// "LLD" on the first line are not disturbed.
static bool asksForVersion(ArrayRef<const char *> Args) {
  for (StringRef A : Args.drop_front())
    if (A == "--version" || A == "-version" || A == "-v" || A == "-V")
      return true;
  return false;
}

namespace {
enum class DriverKind { HasDTLTO, PlainLTO, MinGW };
}

// Which of LLD's drivers will run, as far as DTLTO is concerned (LLD's own
// rules: the program name or -flavor; -m <PE emulation> makes ld.lld MinGW).
static DriverKind driverKind(ArrayRef<const char *> Args) {
  StringRef Flavor = sys::path::stem(Args[0]);
  if (Args.size() > 2 && StringRef(Args[1]) == "-flavor")
    Flavor = Args[2];
  if (Flavor.contains("ld64") || Flavor == "darwin" || Flavor.contains("wasm"))
    return DriverKind::PlainLTO;
  if (Flavor.contains("link"))
    return DriverKind::HasDTLTO;
  for (size_t I = 1; I < Args.size(); ++I) {
    StringRef A = Args[I];
    StringRef Emulation;
    if (A == "-m" && I + 1 < Args.size())
      Emulation = Args[I + 1];
    else if (A.starts_with("-m") && !A.starts_with("-mllvm"))
      Emulation = A.drop_front(2);
    if (Emulation.ends_with("pe") || Emulation.ends_with("pep"))
      return DriverKind::MinGW;
  }
  return DriverKind::HasDTLTO;
}

// For the MinGW driver, LLD's ELF spellings become the COFF linker's own.
static void toCOFFOptions(std::vector<const char *> &Args, StringSaver &Saver) {
  for (const char *&A : Args) {
    StringRef Value;
    StringRef Name = dtlto::parseDistributionOption(A, Value);
    if (!Name.empty())
      A = Saver.save("-Xlink=/" + Name + ":" + Value).data();
  }
}

int main(int argc, const char **argv) {
  InitLLVM X(argc, argv);
  BumpPtrAllocator Alloc;
  StringSaver Saver(Alloc);
  std::vector<const char *> Args(argv, argv + argc);
  DriverKind Kind = driverKind(Args);
  if (Kind != DriverKind::HasDTLTO) {
    SmallVector<const char *, 64> Expanded(Args.begin(), Args.end());
    cl::ExpandResponseFiles(Saver, cl::TokenizeGNUCommandLine, Expanded);
    Args.assign(Expanded.begin(), Expanded.end());
    if (Kind == DriverKind::PlainLTO)
      dtlto::takeFromCommandLine(Args);
    else
      toCOFFOptions(Args, Saver);
  }
  // A link exits as LLD's own executable makes it exit: as soon as the
  // driver is done, without destroying what the link built (symbol tables,
  // input files, the combined summary index): CPU that the stock linker,
  // and so in-process ThinLTO, never spends (docs/performance.md, "Up to the
  // distributor"). The engine has removed its temporary files by then: the
  // ThinLTO backend that owns them is gone when LTO::run returns.
  if (!asksForVersion(Args))
    return lld::unsafeLldMain(Args, outs(), errs(), LLD_ALL_DRIVERS,
                              /*ExitEarly=*/true);
  lld::Result R = lld::lldMain(Args, outs(), errs(), LLD_ALL_DRIVERS);
  outs() << "with the dtlto " DTLTO_VERSION " DTLTO engine, built on LLVM "
         << LLVM_VERSION_STRING << "\n";
  return R.retCode;
}
