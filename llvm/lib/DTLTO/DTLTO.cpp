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

#include "llvm/DTLTO/DTLTO.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TimeProfiler.h"

using namespace llvm;
using namespace llvm::lto;

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
  auto IDTaken = [&](StringRef ID) {
    return any_of(InputFiles, [&](const std::shared_ptr<InputFile> &Other) {
      return Other != Input &&
             Other->getPrimaryBitcodeModule().getModuleIdentifier() == ID;
    });
  };
  C.IsThinArchive = IsThin;
  C.IDTaken = IDTaken;
  Expected<std::string> NewID = dtlto::prepareInput(*Input, C);
  if (!NewID)
    return NewID.takeError();
  if (!NewID->empty())
    Input->getPrimaryBitcodeModule().setModuleIdentifier(Saver.save(*NewID));
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
  dtlto::forgetPreparedInputs();
}
