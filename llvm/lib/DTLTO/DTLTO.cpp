//===- DTLTO.cpp - Inputs that remote ThinLTO backends can load -----------===//
//
// Our implementation of llvm::lto::DTLTO. A remote backend job loads its
// module, and every module it imports from, by module ID, as a file path. That
// holds for plain bitcode files, but not for
//   - members of regular archives: written to a temporary file of their own;
//   - bitcode inside FatLTO objects: written to a temporary file of its own;
//   - members of thin archives: they are files already; the module ID becomes
//     the member's own path (unless the member is a FatLTO object: its
//     bitcode is copied, as for a loose one);
//   - inputs whose path is not ASCII: LLVM 22's index writer garbles such
//     module paths, so they get an ASCII-named temporary copy.
// Only the inputs the link actually uses reach addInput() (LLD adds archive
// members lazily), and the backend writes out only the copies its jobs read
// (see PreparedInputs.h).
//
//===----------------------------------------------------------------------===//

#include "dtlto/Options.h"
#include "dtlto/PreparedInputs.h"
#include "dtlto/TempFiles.h"

#include "llvm/DTLTO/DTLTO.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TimeProfiler.h"

using namespace llvm;
using namespace llvm::lto;

static std::string describe(const InputFile &Input) {
  if (!Input.getArchivePath().empty())
    return "archive member '" + Input.getArchivePath().str() + "(" +
           Input.getMemberName().str() + ")'";
  if (Input.isFatLTOObject())
    return "FatLTO bitcode of '" + Input.getName().str() + "'";
  return "ASCII-named copy of '" + Input.getName().str() + "'";
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

  BitcodeModule &BM = Input->getPrimaryBitcodeModule();
  StringRef OldID = BM.getModuleIdentifier();
  StringRef Archive = Input->getArchivePath();
  if (Archive.empty() && !Input->isFatLTOObject() &&
      dtlto::isSafeModulePath(OldID))
    return Input;

  std::string NewID;
  if (!Archive.empty() && !Input->isFatLTOObject()) {
    Expected<bool> Thin = isThinArchive(Archive);
    if (!Thin)
      return Thin.takeError();
    if (*Thin)
      NewID = dtlto::thinArchiveMemberPath(Archive, Input->getMemberName());
  }
  if (NewID.empty() || !dtlto::isSafeModulePath(NewID)) {
    // A bad setting fails the link once, in the backend (which reads it
    // before any job runs); here it only means our names.
    Expected<bool> Compat = dtlto::upstreamCompat();
    bool UpstreamNames = Compat && *Compat;
    if (!Compat)
      consumeError(Compat.takeError());
    StringRef Name = Input->getMemberName();
    if (Name.empty())
      Name = Input->getName();
    NewID = UpstreamNames ? dtlto::upstreamSerializedInputPath(
                          LinkerOutputFile, OldID, InputFiles.size())
                    : dtlto::serializedInputPath(
                          LinkerOutputFile, Name,
                          Input->getFileBuffer().getBuffer());
    // The same bitcode under the same name twice (one object in two
    // archives): module IDs must differ.
    if (any_of(InputFiles, [&](const std::shared_ptr<InputFile> &Other) {
          return Other != Input &&
                 Other->getPrimaryBitcodeModule().getModuleIdentifier() ==
                     NewID;
        }))
      NewID.insert(NewID.size() - 2, "." + std::to_string(InputFiles.size()));
    Input->setSerializeForDistribution(true);
  }
  dtlto::PreparedInput Prepared;
  Prepared.OriginalName = std::string(OldID);
  if (Input->getSerializeForDistribution()) {
    Prepared.Copy = Input->getFileBuffer();
    Prepared.Description = describe(*Input);
  }
  dtlto::recordPreparedInput(NewID, std::move(Prepared));
  BM.setModuleIdentifier(Saver.save(NewID));
  return Input;
}

Expected<bool> DTLTO::isThinArchive(const StringRef ArchivePath) {
  auto Cached = ArchiveIsThinCache.find(ArchivePath);
  if (Cached != ArchiveIsThinCache.end())
    return Cached->second;
  static constexpr StringLiteral ThinMagic = "!<thin>\n";
  ErrorOr<std::unique_ptr<MemoryBuffer>> Head =
      MemoryBuffer::getFileSlice(ArchivePath, ThinMagic.size(), 0);
  if (!Head)
    return createStringError(Head.getError(),
                             "DTLTO cannot read the archive '" + ArchivePath +
                                 "': " + Head.getError().message());
  bool Thin = (*Head)->getBuffer() == ThinMagic;
  ArchiveIsThinCache[ArchivePath] = Thin;
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
