//===- DTLTO.cpp - Inputs that remote ThinLTO backends can load -----------===//
//
// Our implementation of llvm::lto::DTLTO, which LLD's ELF and COFF drivers
// make for a DTLTO link. Each input gets a module ID that a remote job can
// load as a file (InputPreparation.h). Only the inputs the link actually
// uses reach addInput() (LLD adds archive members lazily), and the backend
// writes out only the copies its jobs read (see PreparedInputs.h).
//
//===----------------------------------------------------------------------===//

#include "dtlto/InputPreparation.h"
#include "dtlto/PreparedInputs.h"
#include "dtlto/TempFiles.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/DTLTO/DTLTO.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TimeProfiler.h"

#include <memory>
#include <mutex>

using namespace llvm;
using namespace llvm::lto;

// The module IDs of the inputs each DTLTO object was given so far, final
// once addInput() returns. LLVM's header fixes the class's members, so they
// live here, by object. Asking whether an ID is taken used to walk every
// input: a link of n archive members cost n^2 (7.3 s of adding 30,000
// inputs, 0.6 ms an input by the end).
namespace {
struct IDTable {
  std::mutex Mu;
  DenseMap<const DTLTO *, std::unique_ptr<StringSet<>>> ByLink;
};
} // namespace

static IDTable &idTable() {
  static IDTable Table;
  return Table;
}

static StringSet<> &idsOf(const DTLTO *Link, bool FirstInput) {
  IDTable &T = idTable();
  std::lock_guard<std::mutex> Lock(T.Mu);
  std::unique_ptr<StringSet<>> &IDs = T.ByLink[Link];
  // A link at the address of one that ended without cleanup() starts afresh.
  if (!IDs || FirstInput)
    IDs = std::make_unique<StringSet<>>();
  return *IDs;
}

static void forgetIDsOf(const DTLTO *Link) {
  IDTable &T = idTable();
  std::lock_guard<std::mutex> Lock(T.Mu);
  T.ByLink.erase(Link);
}

Expected<std::shared_ptr<InputFile>>
DTLTO::addInput(std::unique_ptr<InputFile> InputPtr) {
  TimeTraceScope Scope("Add input for DTLTO", InputPtr->getName());
  // The InputFile, and so its buffer, must stay alive until the backend has
  // written out the copy, during run().
  std::shared_ptr<InputFile> Input(InputPtr.release());
  InputFiles.push_back(Input);
  if (LinkerOutputDir.empty())
    LinkerOutputDir = Saver.save(dtlto::tempDir(LinkerOutputFile));

  dtlto::InputContext C;
  C.LinkerOutputFile = LinkerOutputFile;
  C.InputNumber = InputFiles.size();
  C.LinkerNamesMembers = true;
  auto IsThin = [this](StringRef Archive) { return isThinArchive(Archive); };
  // Another input's ID: those added before this one (their IDs are final).
  StringSet<> &IDs = idsOf(this, /*FirstInput=*/InputFiles.size() == 1);
  auto IDTaken = [&](StringRef ID) { return IDs.contains(ID); };
  C.IsThinArchive = IsThin;
  C.IDTaken = IDTaken;
  Expected<std::string> NewID = dtlto::prepareInput(*Input, C);
  if (!NewID)
    return NewID.takeError();
  if (!NewID->empty())
    Input->getPrimaryBitcodeModule().setModuleIdentifier(Saver.save(*NewID));
  IDs.insert(Input->getPrimaryBitcodeModule().getModuleIdentifier());
  return Input;
}

Expected<bool> DTLTO::isThinArchive(const StringRef ArchivePath) {
  auto Cached = ArchiveIsThinCache.find(ArchivePath);
  if (Cached != ArchiveIsThinCache.end())
    return Cached->second;
  Expected<bool> Thin = dtlto::isThinArchiveFile(ArchivePath);
  if (Thin)
    ArchiveIsThinCache[ArchivePath] = *Thin;
  return Thin;
}

// The copies are written by the backend, and only those a job reads: a
// relink served wholly from the ThinLTO cache writes none.
Error DTLTO::serializeInputsForDistribution() { return Error::success(); }

// The backend removed the copies it wrote.
void DTLTO::cleanup() {
  TimeTraceScope Scope("Remove temporary inputs for DTLTO");
  InputFiles.clear();
  forgetIDsOf(this);
  dtlto::forgetPreparedInputs();
}
