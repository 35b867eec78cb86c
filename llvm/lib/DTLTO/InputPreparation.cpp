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
static bool isOwnFile(const InputFile &Input, StringRef ID,
                      sys::fs::file_status &St) {
  return !sys::fs::status(ID, St) && sys::fs::is_regular_file(St) &&
         St.getSize() == Input.getFileBuffer().getBufferSize();
}

static bool isOwnFile(const InputFile &Input, StringRef ID) {
  sys::fs::file_status St;
  return isOwnFile(Input, ID, St);
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

// A thin archive's member is a file of its own, which a remote job could
// read in place, as LLVM's DTLTO does. Ours gets a copy's name all the same
// (a hard link, PreparedInputs.cpp): a job takes the modules it imports from
// in the sorted order of their IDs, which places the variables it imports,
// and a member's own path ("obj/m25.o") sorts unlike its in-process ID
// ("lib/libg2.a(m25.o at 11152)") where the copy's name
// ("libg2.a(m25.o).<output stem>.<hash>.o") sorts as regular members' do.
// The member's path and file system, when the input is such a member and
// that file is it; an empty path otherwise.
struct ThinMember {
  std::string Path;
  uint64_t Device = 0;
};

static Expected<ThinMember> thinMemberFile(InputFile &Input,
                                           const InputContext &C) {
  StringRef Archive = Input.getArchivePath();
  if (Archive.empty() || Input.isFatLTOObject())
    return ThinMember();
  Expected<bool> Thin = C.IsThinArchive(Archive);
  if (!Thin)
    return Thin.takeError();
  if (!*Thin)
    return ThinMember();
  std::string Path = thinArchiveMemberPath(Archive, Input.getMemberName());
  sys::fs::file_status St;
  if (!isOwnFile(Input, Path, St))
    return ThinMember();
  return ThinMember{std::move(Path), St.getUniqueID().getDevice()};
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

  Expected<ThinMember> Member = thinMemberFile(Input, C);
  if (!Member)
    return Member.takeError();
  // A bad setting fails the link once, in the backend (which reads it
  // before any job runs); here it only means our names.
  Expected<bool> Compat = upstreamCompat();
  bool UpstreamNames = Compat && *Compat;
  if (!Compat)
    consumeError(Compat.takeError());

  std::string NewID;
  if (UpstreamNames && isSafeModulePath(Member->Path))
    NewID = Member->Path;
  if (NewID.empty()) {
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
    Prepared.LinkFrom = std::move(Member->Path);
    Prepared.LinkFromDevice = Member->Device;
  }
  recordPreparedInput(NewID, std::move(Prepared));
  return NewID;
}

} // namespace dtlto
