//===- Bundle.cpp - Reading one DTLTO job as one file ---------------------===//
//
// The reader of the bundle format (docs/bundle.md):
//
//   DTLTO-BUNDLE <version>\n
//   <header: one line of JSON>\n
//   <the files' bytes, in the header's order, nothing after>
//
// Everything is checked before anything is unpacked: the magic line, the
// version, the header's fields, every name (relative, no "..", no two alike),
// the sizes against the file's length and every file's CRC-32. A bundle that
// fails a check was damaged on its way or was never one.
//
//===----------------------------------------------------------------------===//

#include "Bundle.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CRC.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"

using namespace llvm;
using namespace dtlto;

static const char Magic[] = "DTLTO-BUNDLE ";

// A relative path that stays below the root: no leading '/', no "..", no
// empty or "." components.
static bool isSafeName(StringRef Name) {
  if (Name.empty() || Name.starts_with("/") || Name.contains('\0'))
    return false;
  SmallVector<StringRef, 8> Parts;
  Name.split(Parts, '/');
  for (StringRef P : Parts)
    if (P.empty() || P == "." || P == "..")
      return false;
  return true;
}

Expected<Bundle> dtlto::readBundle(StringRef Path) {
  StringRef Shown = Path == "-" ? "<stdin>" : Path;
  auto Fail = [&](const Twine &Why) {
    return createStringError(inconvertibleErrorCode(),
                             "the bundle '" + Shown + "' " + Why);
  };
  ErrorOr<std::unique_ptr<MemoryBuffer>> Buf =
      Path == "-" ? MemoryBuffer::getSTDIN()
                  : MemoryBuffer::getFile(Path, /*IsText=*/false,
                                          /*RequiresNullTerminator=*/false);
  if (!Buf)
    return Fail("cannot be read: " + Buf.getError().message());

  Bundle B;
  B.Buffer = std::move(*Buf);
  StringRef Rest = B.Buffer->getBuffer();
  if (!Rest.consume_front(Magic))
    return Fail("is not a DTLTO bundle (it does not start with '" +
                StringRef(Magic).rtrim() + "')");
  auto [VersionText, AfterVersion] = Rest.split('\n');
  unsigned Version;
  if (VersionText.getAsInteger(10, Version))
    return Fail("is damaged: bad version '" + VersionText + "'");
  if (Version != BundleVersion)
    return Fail("is a version " + Twine(Version) +
                " bundle, but this dtlto-backend reads version " +
                Twine(BundleVersion) +
                "; use the same dtlto on the link and the farm");
  size_t EndOfHeader = AfterVersion.find('\n');
  if (EndOfHeader == StringRef::npos)
    return Fail("is damaged: it ends inside its header");
  StringRef HeaderText = AfterVersion.take_front(EndOfHeader);
  StringRef Data = AfterVersion.drop_front(EndOfHeader + 1);

  Expected<json::Value> Header = json::parse(HeaderText);
  if (!Header)
    return Fail("is damaged: its header is not JSON: " +
                toString(Header.takeError()));
  const json::Object *H = Header->getAsObject();
  if (!H)
    return Fail("is damaged: its header is not a JSON object");
  std::optional<StringRef> Kind = H->getString("kind");
  if (!Kind || (*Kind != "backend" && *Kind != "command"))
    return Fail("is damaged: 'kind' must be \"backend\" or \"command\"");
  B.Kind = Kind->str();
  const json::Array *Args = H->getArray("args");
  if (!Args || Args->empty())
    return Fail("is damaged: 'args' must be a non-empty list of strings");
  for (const json::Value &A : *Args) {
    std::optional<StringRef> S = A.getAsString();
    if (!S)
      return Fail("is damaged: 'args' must be a non-empty list of strings");
    B.Args.push_back(S->str());
  }
  std::optional<StringRef> Cwd = H->getString("cwd");
  std::optional<StringRef> Output = H->getString("output");
  if (!Cwd || (*Cwd != "." && !isSafeName(*Cwd)))
    return Fail("is damaged: 'cwd' must be a relative path below the root");
  if (!Output || !isSafeName(*Output))
    return Fail("is damaged: 'output' must be a relative path below the root");
  B.Cwd = Cwd->str();
  B.Output = Output->str();

  const json::Array *Files = H->getArray("files");
  if (!Files)
    return Fail("is damaged: 'files' is missing");
  StringSet<> Seen;
  for (const json::Value &V : *Files) {
    const json::Object *F = V.getAsObject();
    std::optional<StringRef> Name = F ? F->getString("name") : std::nullopt;
    std::optional<int64_t> Size = F ? F->getInteger("size") : std::nullopt;
    std::optional<int64_t> CRC = F ? F->getInteger("crc32") : std::nullopt;
    if (!Name || !Size || !CRC || *Size < 0)
      return Fail("is damaged: each of 'files' needs a name, a size and a "
                  "crc32");
    if (!isSafeName(*Name))
      return Fail("is damaged: the file name '" + *Name +
                  "' is not a relative path below the root");
    if (!Seen.insert(*Name).second)
      return Fail("is damaged: it holds '" + *Name + "' twice");
    if (static_cast<uint64_t>(*Size) > Data.size())
      return Fail("is damaged: it ends inside '" + *Name + "' (" +
                  Twine(Data.size()) + " of " + Twine(*Size) +
                  " bytes are there): was it cut short?");
    StringRef Bytes = Data.take_front(*Size);
    Data = Data.drop_front(*Size);
    uint32_t Actual = crc32(arrayRefFromStringRef(Bytes));
    if (Actual != static_cast<uint64_t>(*CRC))
      return Fail("is damaged: '" + *Name + "' does not match its CRC-32");
    B.Files.push_back({Name->str(), Bytes});
  }
  if (!Data.empty())
    return Fail("is damaged: " + Twine(Data.size()) +
                " bytes follow its last file");
  return B;
}
