//===- LocalPlugin.cpp - The local distributor plugin ---------------------===//
//
// Runs jobs in `dtlto-backend --memory` workers on this machine: one thread
// per worker slot, each feeding its worker the link once and then a job at
// a time over its stdin, and reading the object from its stdout. Nothing
// touches the disk. dtlto-backend runs each job exactly as in-process
// ThinLTO would, so the objects are those of an in-process link, whatever
// the remote compiler the link names.
//
// A worker that dies fails the job it had (the linker compiles that job
// itself) and is replaced for the next. Largest jobs first, as our Python
// distributors do: the link then does not wait on one big job at the end.
//
//===----------------------------------------------------------------------===//

#include "LocalPlugin.h"
#include "WriteAll.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <mutex>
#include <spawn.h>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

extern char **environ;

using namespace llvm;
using dtlto::writeAll;

namespace {

/// One `dtlto-backend --memory` process.
struct Worker {
  pid_t Pid = 0;
  int In = -1, Out = -1; // its stdin and stdout, our ends
  std::string Buf;       // read from Out, not used yet

  bool running() const { return Pid > 0; }

  bool fill() {
    char Chunk[1 << 16];
    ssize_t N;
    do
      N = read(Out, Chunk, sizeof(Chunk));
    while (N < 0 && errno == EINTR);
    if (N <= 0)
      return false;
    Buf.append(Chunk, N);
    return true;
  }
  bool line(std::string &L) {
    for (size_t NL; (NL = Buf.find('\n')) == std::string::npos;)
      if (!fill())
        return false;
    size_t NL = Buf.find('\n');
    L = Buf.substr(0, NL);
    Buf.erase(0, NL + 1);
    return true;
  }
  bool bytes(size_t N, std::string &Out) {
    while (Buf.size() < N)
      if (!fill())
        return false;
    Out = Buf.substr(0, N);
    Buf.erase(0, N);
    return true;
  }

  /// Ends it: its stdin closes, it exits; returns how.
  std::string stop() {
    if (!running())
      return "";
    close(In);
    close(Out);
    int St = 0;
    while (waitpid(Pid, &St, 0) < 0 && errno == EINTR) {
    }
    Pid = 0;
    In = Out = -1;
    Buf.clear();
    if (WIFSIGNALED(St))
      return std::string("killed by signal ") + strsignal(WTERMSIG(St));
    return "exited with code " + std::to_string(WEXITSTATUS(St));
  }
};

struct Session {
  const dtlto_link *Link = nullptr;
  const dtlto_engine *Engine = nullptr;
  std::string Backend;
  std::string Refusal; // why every job fails, when set

  std::mutex Mu;
  std::condition_variable Changed;
  std::vector<const dtlto_job *> Queue;
  std::vector<pid_t> WorkerPids; // per slot, 0 when none
  bool Stopping = false;
  std::vector<std::thread> Slots;

  void runSlot(unsigned K);
  bool start(Worker &W, std::string &Error);
  /// Runs J on W. False with Error when the job failed; with Broken too
  /// when the worker is no longer usable (Error then says what it was
  /// doing, and the caller says how it ended).
  bool runJob(Worker &W, const dtlto_job &J, std::string &Object,
              std::string &Error, bool &Broken);
};

bool Session::start(Worker &W, std::string &Error) {
  int ToChild[2], FromChild[2];
  if (pipe2(ToChild, O_CLOEXEC))
    return Error = std::string("pipe: ") + strerror(errno), false;
  if (pipe2(FromChild, O_CLOEXEC)) {
    close(ToChild[0]);
    close(ToChild[1]);
    return Error = std::string("pipe: ") + strerror(errno), false;
  }
  posix_spawn_file_actions_t Actions;
  posix_spawn_file_actions_init(&Actions);
  posix_spawn_file_actions_adddup2(&Actions, ToChild[0], 0);
  posix_spawn_file_actions_adddup2(&Actions, FromChild[1], 1);
  std::string Arg0 = Backend, Arg1 = "--memory";
  char *Argv[] = {Arg0.data(), Arg1.data(), nullptr};
  int Err =
      posix_spawn(&W.Pid, Backend.c_str(), &Actions, nullptr, Argv, environ);
  posix_spawn_file_actions_destroy(&Actions);
  close(ToChild[0]);
  close(FromChild[1]);
  if (Err) {
    close(ToChild[1]);
    close(FromChild[0]);
    W.Pid = 0;
    Error = "cannot run '" + Backend + "': " + strerror(Err);
    return false;
  }
  W.In = ToChild[1];
  W.Out = FromChild[0];
  std::string Head;
  raw_string_ostream OS(Head);
  OS << json::Value(json::Object{{"config", int64_t(Link->backend_config.size)}})
     << "\n";
  StringRef Config(static_cast<const char *>(Link->backend_config.data),
                   Link->backend_config.size);
  if (!writeAll(W.In, Head) || !writeAll(W.In, Config)) {
    Error = "the dtlto-backend worker " + W.stop() + " at its start";
    return false;
  }
  return true;
}

bool Session::runJob(Worker &W, const dtlto_job &J, std::string &Object,
                     std::string &Error, bool &Broken) {
  json::Array Inputs;
  for (size_t I = 0; I < J.num_inputs; ++I)
    Inputs.push_back(
        json::Object{{"name", J.inputs[I].name},
                     {"size", int64_t(J.inputs[I].contents.size)}});
  std::string Head;
  raw_string_ostream OS(Head);
  OS << json::Value(json::Object{{"inputs", std::move(Inputs)}}) << "\n";
  bool Sent = writeAll(W.In, Head);
  for (size_t I = 0; Sent && I < J.num_inputs; ++I)
    Sent = writeAll(
        W.In, StringRef(static_cast<const char *>(J.inputs[I].contents.data),
                        J.inputs[I].contents.size));
  std::string Reply;
  if (!Sent || !W.line(Reply)) {
    Broken = true;
    Error = " running the job";
    return false;
  }
  Expected<json::Value> V = json::parse(Reply);
  const json::Object *O = V ? V->getAsObject() : nullptr;
  if (!V)
    consumeError(V.takeError());
  if (!O) {
    Broken = true;
    Error = " after answering '" + Reply + "'";
    return false;
  }
  if (!O->getBoolean("ok").value_or(false)) {
    Error = O->getString("error").value_or("the job failed").str();
    return false;
  }
  if (!W.bytes(O->getInteger("bytes").value_or(0), Object)) {
    Broken = true;
    Error = " sending the object";
    return false;
  }
  return true;
}

void Session::runSlot(unsigned K) {
  Worker W;
  std::string Name = "local/" + std::to_string(K);
  for (;;) {
    const dtlto_job *J;
    {
      std::unique_lock<std::mutex> Lock(Mu);
      Changed.wait(Lock, [&] { return Stopping || !Queue.empty(); });
      if (Stopping)
        break;
      auto Largest =
          std::max_element(Queue.begin(), Queue.end(),
                           [](const dtlto_job *A, const dtlto_job *B) {
                             return A->input_bytes < B->input_bytes;
                           });
      J = *Largest;
      Queue.erase(Largest);
    }
    uint64_t Id = J->id;
    Engine->started(Engine->ctx, Id, Name.c_str());
    std::string Object, Error;
    bool Ok = W.running() || start(W, Error);
    if (Ok) {
      // While registered, close() may kill it; it is reaped only after.
      {
        std::lock_guard<std::mutex> Lock(Mu);
        WorkerPids[K] = W.Pid;
      }
      bool Broken = false;
      Ok = runJob(W, *J, Object, Error, Broken);
      {
        std::lock_guard<std::mutex> Lock(Mu);
        WorkerPids[K] = 0;
      }
      if (Broken)
        Error = "the dtlto-backend worker " + W.stop() + Error;
    }
    if (Ok)
      Engine->done(Engine->ctx, Id, {Object.data(), Object.size()});
    else
      Engine->failed(Engine->ctx, Id, Error.c_str(), 0);
  }
  W.stop();
}

void *openLocal(const dtlto_link *Link, const dtlto_engine *Engine,
                const char *const *Args, size_t NumArgs, char *Error,
                size_t ErrorSize) {
  auto Refuse = [&](const std::string &Why) -> void * {
    snprintf(Error, ErrorSize, "%s", Why.c_str());
    return nullptr;
  };
  unsigned Jobs = std::max(1u, std::thread::hardware_concurrency());
  for (size_t I = 0; I < NumArgs; ++I) {
    StringRef A = Args[I];
    if (A.consume_front("--jobs=")) {
      if (A.getAsInteger(10, Jobs) || Jobs < 1 || Jobs > 1024)
        return Refuse("--jobs= takes a number from 1 to 1024");
    } else {
      return Refuse("unknown argument '" + A.str() + "' (it takes --jobs=N)");
    }
  }
  if (!Link->dtlto_backend)
    return Refuse("it runs dtlto-backend, and found none next to the "
                  "plugin host");
  auto *S = new Session;
  S->Link = Link;
  S->Engine = Engine;
  S->Backend = Link->dtlto_backend;
  if (!Link->backend_config.size)
    S->Refusal = "dtlto-backend cannot reproduce this link's LTO "
                 "configuration (see docs/plugins.md)";
  S->WorkerPids.assign(Jobs, 0);
  for (unsigned K = 0; K < Jobs; ++K)
    S->Slots.emplace_back([S, K] { S->runSlot(K); });
  return S;
}

int submitLocal(void *Ptr, const dtlto_job *J) {
  auto *S = static_cast<Session *>(Ptr);
  if (!S->Refusal.empty()) {
    S->Engine->failed(S->Engine->ctx, J->id, S->Refusal.c_str(), 0);
    return 0;
  }
  S->Engine->accepted(S->Engine->ctx, J->id);
  {
    std::lock_guard<std::mutex> Lock(S->Mu);
    S->Queue.push_back(J);
  }
  S->Changed.notify_one();
  return 0;
}

// A queued job is dropped; a running one finishes (its done is the answer).
void cancelLocal(void *Ptr, uint64_t Id) {
  auto *S = static_cast<Session *>(Ptr);
  bool Dropped = false;
  {
    std::lock_guard<std::mutex> Lock(S->Mu);
    auto It = std::find_if(S->Queue.begin(), S->Queue.end(),
                           [&](const dtlto_job *J) { return J->id == Id; });
    if (It != S->Queue.end()) {
      S->Queue.erase(It);
      Dropped = true;
    }
  }
  if (Dropped)
    S->Engine->cancelled(S->Engine->ctx, Id);
}

void endLocal(void *) {}

// Stops the slots; workers still compiling are killed.
void closeLocal(void *Ptr) {
  auto *S = static_cast<Session *>(Ptr);
  {
    std::lock_guard<std::mutex> Lock(S->Mu);
    S->Stopping = true;
    for (pid_t P : S->WorkerPids)
      if (P > 0)
        kill(P, SIGKILL);
  }
  S->Changed.notify_all();
  for (std::thread &T : S->Slots)
    T.join();
  delete S;
}

const dtlto_plugin LocalPlugin = {DTLTO_PLUGIN_ABI_VERSION,
                                  0,
                                  "local",
                                  openLocal,
                                  submitLocal,
                                  cancelLocal,
                                  endLocal,
                                  closeLocal};

} // namespace

const dtlto_plugin *dtlto::localPluginEntry(uint32_t HostAbiVersion) {
  return HostAbiVersion == DTLTO_PLUGIN_ABI_VERSION ? &LocalPlugin : nullptr;
}
