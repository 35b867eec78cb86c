//===- Options.cpp - Engine settings that are not LLD options -------------===//

#include "dtlto/Options.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include <cstdlib>

using namespace llvm;

static cl::opt<bool>
    VerboseOpt("dtlto-verbose",
               cl::desc("Print a summary of each DTLTO link on stderr"));

static bool envFlag(const char *Name) {
  const char *V = std::getenv(Name);
  return V && *V && StringRef(V) != "0";
}

bool dtlto::verbose() { return VerboseOpt || envFlag("DTLTO_VERBOSE"); }
