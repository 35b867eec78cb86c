//===- InputPreparation.cpp - Module IDs that remote jobs can load --------===//

#include "dtlto/InputPreparation.h"
#include "dtlto/Options.h"
#include "dtlto/PreparedInputs.h"
#include "dtlto/TempFiles.h"

#include "llvm/LTO/LTO.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace llvm;
using namespace llvm::lto;

namespace dtlto {

static std::string describe(const InputFile &Input) {
  if (!Input.getArchivePath().empty())
    return "archive member '" + Input.getArchivePath().str() + "(" +
           Input.getMemberName().str() + ")'";
  if (Input.isFatLTOObject())
    return "FatLTO bitcode of '" + Input.getName().str() + "'";
  return "copy of '" + Input.getName().str() + "'";
}

// An input the linker says nothing about is a file of its own when its
// module ID names a file with exactly its bytes (a loose bitcode file);
// archive members ("lib.a(m.o)120"), FatLTO objects and files in memory are
// not.
static bool isOwnFile(const InputFile &Input, StringRef ID) {
  sys::fs::file_status St;
  return !sys::fs::status(ID, St) && sys::fs::is_regular_file(St) &&
         St.getSize() == Input.getFileBuffer().getBufferSize();
}

Expected<bool> isThinArchiveFile(StringRef Path) {
  static constexpr StringLiteral ThinMagic = "!<thin>\n";
  ErrorOr<std::unique_ptr<MemoryBuffer>> Head =
      MemoryBuffer::getFileSlice(Path, ThinMagic.size(), 0);
  if (!Head)
    return createStringError(Head.getError(),
                             "DTLTO cannot read the archive '" + Path +
                                 "': " + Head.getError().message());
  return (*Head)->getBuffer() == ThinMagic;
}

Expected<std::string> prepareInput(InputFile &Input, const InputContext &C) {
  BitcodeModule &BM = Input.getPrimaryBitcodeModule();
  StringRef OldID = BM.getModuleIdentifier();
  StringRef Archive = Input.getArchivePath();
  bool InPlace = C.LinkerNamesMembers
                     ? Archive.empty() && !Input.isFatLTOObject()
                     : isOwnFile(Input, OldID);
  if (InPlace && isSafeModulePath(OldID))
    return std::string();

  std::string NewID;
  if (!Archive.empty() && !Input.isFatLTOObject()) {
    Expected<bool> Thin = C.IsThinArchive(Archive);
    if (!Thin)
      return Thin.takeError();
    if (*Thin)
      NewID = thinArchiveMemberPath(Archive, Input.getMemberName());
  }
  if (NewID.empty() || !isSafeModulePath(NewID)) {
    // A bad setting fails the link once, in the backend (which reads it
    // before any job runs); here it only means our names.
    Expected<bool> Compat = upstreamCompat();
    bool UpstreamNames = Compat && *Compat;
    if (!Compat)
      consumeError(Compat.takeError());
    // What names the module in-process: "lib.a(m.o)" for a member, as
    // LLD's IDs do without their offset, whatever ID this linker gave it.
    std::string Name =
        !Archive.empty() && !Input.getMemberName().empty()
            ? (sys::path::filename(Archive) + "(" +
               sys::path::filename(Input.getMemberName()) + ")")
                  .str()
            : copyName(OldID);
    NewID = UpstreamNames
                ? upstreamSerializedInputPath(C.LinkerOutputFile, OldID,
                                              C.InputNumber)
                : serializedInputPath(C.LinkerOutputFile, Name,
                                      Input.getFileBuffer().getBuffer());
    // The same bitcode under the same name twice (one object in two
    // archives): module IDs must differ.
    if (C.IDTaken(NewID))
      NewID.insert(NewID.size() - 2, "." + std::to_string(C.InputNumber));
    Input.setSerializeForDistribution(true);
  }
  PreparedInput Prepared;
  Prepared.OriginalName = std::string(OldID);
  if (Input.getSerializeForDistribution()) {
    Prepared.Copy = Input.getFileBuffer();
    Prepared.Description = describe(Input);
  }
  recordPreparedInput(NewID, std::move(Prepared));
  return NewID;
}

} // namespace dtlto
