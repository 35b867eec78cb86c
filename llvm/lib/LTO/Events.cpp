//===- Events.cpp - What a distributor tells the engine about each job ----===//

#include "dtlto/Events.h"
#include "dtlto/Manifest.h"

#include "llvm/Support/JSON.h"

using namespace llvm;

namespace dtlto {

static const char *const KindNames[] = {"accepted", "started", "done", "failed",
                                        "cancelled"};

StringRef jobEventName(JobEvent::Kind K) { return KindNames[K]; }

// No object is that large; a larger size is a broken host.
static constexpr int64_t MaxPayload = int64_t(4) << 30;

static Error bad(const Twine &Why) {
  return createStringError(inconvertibleErrorCode(), Why);
}

Expected<JobEvent> parseJobEvent(StringRef Line) {
  Expected<json::Value> V = json::parse(Line);
  if (!V) {
    consumeError(V.takeError());
    return bad("it is not JSON");
  }
  const json::Object *O = V->getAsObject();
  if (!O)
    return bad("it is not a JSON object");
  JobEvent E;
  std::optional<int64_t> Id = O->getInteger("id");
  if (!Id || *Id < 0)
    return bad("it has no job 'id' (a non-negative integer)");
  E.Id = *Id;
  std::optional<StringRef> Kind = O->getString("event");
  if (!Kind)
    return bad("it has no 'event' string");
  auto *K = find(KindNames, *Kind);
  if (K == std::end(KindNames))
    return bad("the event '" + *Kind + "' is unknown");
  E.What = JobEvent::Kind(K - std::begin(KindNames));

  // Optional keys: a wrong type is an error, absence is not.
  auto Number = [&](StringRef Key, std::optional<double> &Out) -> Error {
    const json::Value *F = O->get(Key);
    if (!F)
      return Error::success();
    std::optional<double> D = F->getAsNumber();
    if (!D || *D < 0)
      return bad("'" + Key + "' is not a non-negative number");
    Out = *D;
    return Error::success();
  };
  auto String = [&](StringRef Key, std::string &Out) -> Error {
    const json::Value *F = O->get(Key);
    if (!F)
      return Error::success();
    std::optional<StringRef> S = F->getAsString();
    if (!S)
      return bad("'" + Key + "' is not a string");
    Out = S->str();
    return Error::success();
  };
  if (Error Err = Number("t", E.Time))
    return std::move(Err);
  if (Error Err = Number("queue_s", E.QueueSeconds))
    return std::move(Err);
  if (Error Err = Number("upload_s", E.UploadSeconds))
    return std::move(Err);
  if (Error Err = Number("compile_s", E.CompileSeconds))
    return std::move(Err);
  if (Error Err = Number("download_s", E.DownloadSeconds))
    return std::move(Err);
  if (Error Err = String("worker", E.Worker))
    return std::move(Err);
  if (Error Err = String("reason", E.Reason))
    return std::move(Err);
  if (const json::Value *A = O->get("attempt")) {
    std::optional<int64_t> N = A->getAsInteger();
    if (!N || *N < 1 || *N > 1000000)
      return bad("'attempt' is not a positive integer");
    E.Attempt = *N;
  }
  if (const json::Value *B = O->get("bytes")) {
    std::optional<int64_t> N = B->getAsInteger();
    if (!N || *N < 0 || *N > MaxPayload)
      return bad("'bytes' is not a size up to 4 GiB");
    E.Bytes = *N;
  }
  if (const json::Value *R = O->get("retry")) {
    std::optional<bool> B = R->getAsBoolean();
    if (!B)
      return bad("'retry' is not true or false");
    E.Retry = *B;
  }
  return E;
}

// A job record; a plugin host's also says how many bytes of each input
// follow it.
static std::string jobRecord(uint64_t Id, const Job &Jb,
                             const ArrayRef<StringRef> *Contents) {
  std::string Line;
  raw_string_ostream OS(Line);
  json::OStream J(OS);
  J.object([&] {
    J.attribute("id", int64_t(Id));
    writeJobFields(J, Jb);
    J.attribute("input_bytes", int64_t(Jb.InputBytes));
    if (Contents)
      J.attributeArray("sizes", [&] {
        for (StringRef C : *Contents)
          J.value(int64_t(C.size()));
      });
  });
  return Line;
}

std::string jobRecordLine(uint64_t Id, const Job &Jb) {
  return jobRecord(Id, Jb, nullptr);
}

std::string cancelLine(uint64_t Id) {
  return ("{\"cancel\": " + Twine(Id) + "}").str();
}

std::string endLine() { return "{\"end\": true}"; }

uint64_t payloadBytes(StringRef Line) {
  if (!Line.contains("\"bytes\""))
    return 0;
  Expected<JobEvent> E = parseJobEvent(Line);
  if (!E) {
    consumeError(E.takeError());
    return 0;
  }
  return E->Bytes;
}

std::string linkFrame(StringRef LinkerOutput, StringRef Triple,
                      ArrayRef<std::string> CommonArgs,
                      ArrayRef<std::string> NativeFiles, StringRef Config) {
  std::string Frame;
  raw_string_ostream OS(Frame);
  json::OStream J(OS);
  J.object([&] {
    J.attributeObject("link", [&] {
      J.attribute("linker_output", LinkerOutput);
      J.attribute("triple", Triple);
      J.attributeArray("args", [&] {
        for (const std::string &A : CommonArgs)
          J.value(A);
      });
      J.attributeArray("native_files", [&] {
        for (const std::string &F : NativeFiles)
          J.value(F);
      });
      J.attribute("backend_config", int64_t(Config.size()));
    });
  });
  OS << '\n' << Config;
  return Frame;
}

std::string jobFrameLine(uint64_t Id, const Job &Jb,
                         ArrayRef<StringRef> Contents) {
  return jobRecord(Id, Jb, &Contents);
}

} // namespace dtlto
