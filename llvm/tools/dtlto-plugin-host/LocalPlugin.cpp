//===- LocalPlugin.cpp - The local distributor plugin ---------------------===//
//
// Runs jobs in `dtlto-backend --memory` workers on this machine: one thread
// per worker slot, each feeding its worker the link once and then its jobs
// over its stdin, and reading the objects from its stdout. Nothing touches
// the disk. dtlto-backend runs each job exactly as in-process ThinLTO would,
// so the objects are those of an in-process link, whatever the remote
// compiler the link names.
//
// A worker holds the modules it was sent until a job tells it to drop them,
// so each module crosses its pipe once, and later jobs name it as held. What
// a worker holds is decided here, within DTLTO_BACKEND_CACHE_MIB (the
// modules unused longest go first), so this side always knows it. While a
// worker compiles one job, the next waits in its pipe (when no other slot
// is idle), so that it never sleeps between jobs. Each job is one write.
//
// A worker that dies fails the job it was running (the linker compiles that
// job itself); the job queued behind it goes back to the queue, and the
// worker is replaced for the next. Largest jobs first, as our Python
// distributors do: the link then does not wait on one big job at the end.
//
// A cancel (the linker's own slot, or a hedged copy, has the object) is
// answered at once, or, for a job being written to a worker, once it is. A
// queued job is dropped; a job a worker runs ends with the worker, which is
// killed (the link does not wait for an object it has); a job written to a
// worker behind another is dropped when its answer comes, or its worker
// killed when it would start it.
//
//===----------------------------------------------------------------------===//

#include "LocalPlugin.h"
#include "dtlto/BackendCache.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <memory>
#include <mutex>
#include <poll.h>
#include <spawn.h>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

extern char **environ;

using namespace llvm;

namespace {

/// One `dtlto-backend --memory` process.
struct Worker {
  pid_t Pid = 0;
  int In = -1, Out = -1; // its stdin and stdout, our ends
  std::string Buf;       // read from Out, not used yet
  /// The modules it holds: their size and the last job (by Sends) that
  /// named them.
  StringMap<std::pair<uint64_t, uint64_t>> Held;
  uint64_t HeldBytes = 0, Sends = 0;

  bool running() const { return Pid > 0; }

  /// Writes Data to its stdin (ours is non-blocking) while reading what
  /// it writes to its stdout into Buf. The next job is written while the
  /// worker still runs the one before; once that job's answer fills the
  /// pipe back to us, the worker waits for us to read it, and reads its
  /// stdin only after. A plain write of a next job larger than the pipe
  /// would wait for the worker forever, as the worker waits for us.
  bool write(StringRef Data) {
    while (!Data.empty()) {
      struct pollfd P[2] = {{In, POLLOUT, 0}, {Out, POLLIN, 0}};
      if (poll(P, 2, -1) < 0) {
        if (errno == EINTR)
          continue;
        return false;
      }
      if (P[1].revents && !fill())
        return false; // it closed its stdout: it is gone
      if (P[0].revents & (POLLERR | POLLHUP | POLLNVAL))
        return false;
      if (!(P[0].revents & POLLOUT))
        continue;
      ssize_t N = ::write(In, Data.data(), Data.size());
      if (N < 0 && (errno == EINTR || errno == EAGAIN))
        continue;
      if (N <= 0)
        return false;
      Data = Data.drop_front(N);
    }
    return true;
  }
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
    Held.clear();
    HeldBytes = 0;
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
  bool Verbose = false;
  uint64_t HeldBudget = 0; // bytes of modules a worker may hold

  std::mutex Mu;
  std::condition_variable Changed;
  /// The queued jobs, a heap by size (largest first; among equals, the
  /// lowest id). A link of 30,000 modules queues most of its jobs at once,
  /// and a scan for the largest at each take would cost the square of
  /// that. A cancelled job leaves Live and is skipped when it comes up;
  /// its entry is not read through Job then (the host may have freed it).
  struct Queued {
    uint64_t Bytes, Id;
    const dtlto_job *Job;
  };
  std::vector<Queued> Queue;
  DenseSet<uint64_t> Live;
  std::vector<pid_t> WorkerPids; // per slot, 0 when none
  /// Jobs a slot has taken, by id: the slot, and whether their bytes are
  /// written to its worker. One cancelled there is in CancelledInSlot
  /// until its slot is done with it; once written it is answered at once
  /// and not read through its pointer again (the host may free it), before
  /// that its slot answers once it has written it.
  struct Taken {
    unsigned Slot;
    bool Written;
  };
  DenseMap<uint64_t, Taken> InSlot;
  DenseSet<uint64_t> CancelledInSlot;
  static constexpr uint64_t NoJob = ~uint64_t(0);
  std::vector<uint64_t> Running;     // per slot: the job its worker runs
  std::vector<char> KilledForCancel; // per slot: we killed its worker
  unsigned Idle = 0;                 // slots waiting for a job
  bool Stopping = false;
  std::vector<std::thread> Slots;
  // For --verbose: what crossed the workers' pipes.
  std::atomic<uint64_t> Jobs{0}, ModulesSent{0}, ModulesHeld{0},
      BytesSent{0};
  size_t MostQueued = 0; // under Mu: the host paces what it submits

  void runSlot(unsigned K);
  /// Queues J (under Mu).
  void push(const dtlto_job *J);
  /// The largest queued job, taken by slot K. With Wait, waits for one
  /// (null when stopping); without, null unless no other slot is idle to
  /// take it.
  const dtlto_job *take(unsigned K, bool Wait);
  bool start(Worker &W, unsigned K, std::string &Error);
  /// Writes J to W: the modules W holds by name, the rest with their bytes.
  bool send(Worker &W, const dtlto_job &J);
  /// Reads W's answer to the job it ran. False with Error when the job
  /// failed; with Broken too when the worker is no longer usable (Error
  /// then says what it was doing, and the caller says how it ended).
  bool receive(Worker &W, std::string &Object, std::string &Error,
               bool &Broken);
  void stopWorker(Worker &W, unsigned K, std::string *How = nullptr);
  /// Kills slot K's worker for a cancel (under Mu); its slot sees it gone.
  void killForCancel(unsigned K);
};

static bool runsLater(const Session::Queued &A, const Session::Queued &B) {
  return A.Bytes != B.Bytes ? A.Bytes < B.Bytes : A.Id > B.Id;
}

void Session::push(const dtlto_job *J) {
  Queue.push_back({J->input_bytes, J->id, J});
  std::push_heap(Queue.begin(), Queue.end(), runsLater);
  Live.insert(J->id);
  MostQueued = std::max<size_t>(MostQueued, Live.size());
}

const dtlto_job *Session::take(unsigned K, bool Wait) {
  std::unique_lock<std::mutex> Lock(Mu);
  if (Wait) {
    ++Idle;
    Changed.wait(Lock, [&] { return Stopping || !Live.empty(); });
    --Idle;
  }
  // A job to queue behind the running one waits while another slot idles,
  // and while this slot's worker is being killed for a cancel: written to
  // a dead worker, it would only come back to the queue.
  if (Stopping || Live.empty() || (!Wait && (Idle || KilledForCancel[K])))
    return nullptr;
  for (;;) {
    std::pop_heap(Queue.begin(), Queue.end(), runsLater);
    Queued Q = Queue.back();
    Queue.pop_back();
    if (Live.erase(Q.Id)) {
      InSlot[Q.Id] = {K, false};
      return Q.Job;
    }
  }
}

bool Session::start(Worker &W, unsigned K, std::string &Error) {
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
  fcntl(W.In, F_SETFL, O_NONBLOCK); // for Worker::write
  // While registered, close() may kill it; it is reaped only after.
  {
    std::lock_guard<std::mutex> Lock(Mu);
    WorkerPids[K] = W.Pid;
  }
  std::string Head;
  raw_string_ostream OS(Head);
  OS << json::Value(json::Object{{"config", int64_t(Link->backend_config.size)}})
     << "\n";
  StringRef Config(static_cast<const char *>(Link->backend_config.data),
                   Link->backend_config.size);
  if (!W.write(Head) || !W.write(Config)) {
    std::string How;
    stopWorker(W, K, &How);
    Error = "the dtlto-backend worker " + How + " at its start";
    return false;
  }
  return true;
}

void Session::killForCancel(unsigned K) {
  if (WorkerPids[K] > 0 && !KilledForCancel[K]) {
    kill(WorkerPids[K], SIGKILL);
    KilledForCancel[K] = 1;
  }
}

void Session::stopWorker(Worker &W, unsigned K, std::string *How) {
  {
    std::lock_guard<std::mutex> Lock(Mu);
    WorkerPids[K] = 0;
  }
  std::string Ended = W.stop();
  if (How)
    *How = Ended;
}

bool Session::send(Worker &W, const dtlto_job &J) {
  uint64_t Seq = ++W.Sends;
  json::Array Inputs;
  std::string Bytes;
  auto WithBytes = [&](const dtlto_input &In) {
    Inputs.push_back(
        json::Object{{"name", In.name}, {"size", int64_t(In.contents.size)}});
    Bytes.append(static_cast<const char *>(In.contents.data),
                 In.contents.size);
  };
  for (size_t I = 0; I < J.num_inputs; ++I) {
    const dtlto_input &In = J.inputs[I];
    if (I == 1) { // the shard: the job's own
      WithBytes(In);
      continue;
    }
    auto [It, New] = W.Held.try_emplace(In.name, In.contents.size, Seq);
    It->second.second = Seq;
    if (New) {
      W.HeldBytes += In.contents.size;
      WithBytes(In);
      ++ModulesSent;
    } else {
      Inputs.push_back(json::Object{{"name", In.name}, {"held", true}});
      ++ModulesHeld;
    }
  }
  // Over the budget: the worker drops, before the job, what has been
  // unused longest (BackendCache.h's rule), never one of this job's.
  json::Array Drop;
  if (W.HeldBytes > HeldBudget) {
    std::vector<dtlto::HeldFile> Others;
    for (const auto &E : W.Held)
      if (E.second.second != Seq)
        Others.push_back({E.second.second, E.second.first, E.first()});
    for (std::string &Name :
         dtlto::filesToDrop(std::move(Others), W.HeldBytes, HeldBudget)) {
      W.Held.erase(Name);
      Drop.push_back(std::move(Name));
    }
  }
  std::string Msg;
  raw_string_ostream OS(Msg);
  OS << json::Value(
            json::Object{{"drop", std::move(Drop)}, {"inputs", std::move(Inputs)}})
     << "\n";
  Msg += Bytes;
  BytesSent += Msg.size();
  ++Jobs;
  return W.write(Msg);
}

bool Session::receive(Worker &W, std::string &Object, std::string &Error,
                      bool &Broken) {
  std::string Reply;
  if (!W.line(Reply)) {
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
  // The jobs W has been sent, in order: the first runs, the next waits in
  // its pipe. Their ids are kept apart: a job answered cancelled may be
  // freed by the host while it is still here.
  struct SentJob {
    uint64_t Id;
    const dtlto_job *Job;
  };
  std::deque<SentJob> Sent;
  for (;;) {
    if (const dtlto_job *J = take(K, /*Wait=*/Sent.empty())) {
      std::string Error;
      if (!W.running() && !start(W, K, Error)) {
        bool Cancelled;
        {
          std::lock_guard<std::mutex> Lock(Mu);
          InSlot.erase(J->id);
          Cancelled = CancelledInSlot.erase(J->id);
        }
        Engine->started(Engine->ctx, J->id, Name.c_str());
        if (Cancelled)
          Engine->cancelled(Engine->ctx, J->id);
        else
          Engine->failed(Engine->ctx, J->id, Error.c_str(), 0);
        continue;
      }
      bool First = Sent.empty();
      if (First)
        Engine->started(Engine->ctx, J->id, Name.c_str());
      Sent.push_back({J->id, J});
      // A failed write shows as a broken worker when its answer is read.
      bool Written = send(W, *J);
      bool CancelledMeanwhile;
      {
        std::lock_guard<std::mutex> Lock(Mu);
        InSlot[J->id].Written = true;
        if (First)
          Running[K] = J->id;
        // A cancel that came while it was written is answered here.
        CancelledMeanwhile = CancelledInSlot.count(J->id);
        if (CancelledMeanwhile && First)
          killForCancel(K);
      }
      if (CancelledMeanwhile)
        Engine->cancelled(Engine->ctx, J->id);
      if (Written && Sent.size() < 2)
        continue; // and queue the next behind it, if there is one
    }
    if (Sent.empty())
      break; // stopping
    std::string Object, Error;
    bool Broken = false;
    bool Ok = receive(W, Object, Error, Broken);
    SentJob Done = Sent.front();
    Sent.pop_front();
    if (Broken) {
      std::string How;
      stopWorker(W, K, &How);
      Error = "the dtlto-backend worker " + How + Error;
    }
    bool Answered, KilledByUs, Next = false;
    {
      std::lock_guard<std::mutex> Lock(Mu);
      InSlot.erase(Done.Id);
      Answered = CancelledInSlot.erase(Done.Id);
      KilledByUs = Broken && KilledForCancel[K];
      Running[K] = NoJob;
      if (Broken) {
        // The job behind it never started: another worker takes it.
        KilledForCancel[K] = 0;
        for (const SentJob &Back : Sent) {
          InSlot.erase(Back.Id);
          if (!CancelledInSlot.erase(Back.Id))
            push(Back.Job);
        }
        Sent.clear();
        // Killed for another job's cancel, this one had not ended: it
        // goes back too.
        if (KilledByUs && !Answered)
          push(Done.Job);
      } else if (!Sent.empty()) {
        // The worker starts the next now; cancelled meanwhile, it ends
        // with the worker.
        Running[K] = Sent.front().Id;
        if (CancelledInSlot.count(Running[K]))
          killForCancel(K);
        else
          Next = true;
      }
    }
    if (Broken)
      Changed.notify_all();
    if (Answered || KilledByUs) {
      // Cancelled already (its object, if any, is not needed), or queued
      // again.
    } else if (Ok) {
      Engine->done(Engine->ctx, Done.Id, {Object.data(), Object.size()});
    } else {
      Engine->failed(Engine->ctx, Done.Id, Error.c_str(), 0);
    }
    if (Next)
      Engine->started(Engine->ctx, Sent.front().Id, Name.c_str());
  }
  stopWorker(W, K);
}

void *openLocal(const dtlto_link *Link, const dtlto_engine *Engine,
                const char *const *Args, size_t NumArgs, char *Error,
                size_t ErrorSize) {
  auto Refuse = [&](const std::string &Why) -> void * {
    snprintf(Error, ErrorSize, "%s", Why.c_str());
    return nullptr;
  };
  unsigned Jobs = std::max(1u, std::thread::hardware_concurrency());
  bool Verbose = false;
  for (size_t I = 0; I < NumArgs; ++I) {
    StringRef A = Args[I];
    if (A.consume_front("--jobs=")) {
      if (A.getAsInteger(10, Jobs) || Jobs < 1 || Jobs > 1024)
        return Refuse("--jobs= takes a number from 1 to 1024");
    } else if (A == "--verbose") {
      Verbose = true;
    } else {
      return Refuse("unknown argument '" + A.str() +
                    "' (it takes --jobs=N and --verbose)");
    }
  }
  Expected<uint64_t> Budget = dtlto::backendCacheBytes();
  if (!Budget)
    return Refuse(toString(Budget.takeError()));
  if (!Link->dtlto_backend)
    return Refuse("it runs dtlto-backend, and found none next to the "
                  "plugin host");
  auto *S = new Session;
  S->Link = Link;
  S->Engine = Engine;
  S->Backend = Link->dtlto_backend;
  S->Verbose = Verbose;
  S->HeldBudget = *Budget;
  if (!Link->backend_config.size)
    S->Refusal = "dtlto-backend cannot reproduce this link's LTO "
                 "configuration (see docs/plugins.md)";
  S->WorkerPids.assign(Jobs, 0);
  S->Running.assign(Jobs, Session::NoJob);
  S->KilledForCancel.assign(Jobs, 0);
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
  // No "accepted": the job is queued here the moment it is handed over,
  // which the link report knows already, and each event costs the engine a
  // wake-up.
  {
    std::lock_guard<std::mutex> Lock(S->Mu);
    S->push(J);
  }
  S->Changed.notify_one();
  return 0;
}

// A queued job is dropped, a running one's worker killed, one written behind
// it dropped when its slot comes to it: each answered at once. One whose
// bytes are being written is answered by its slot once they are.
void cancelLocal(void *Ptr, uint64_t Id) {
  auto *S = static_cast<Session *>(Ptr);
  bool Answer = false;
  {
    std::lock_guard<std::mutex> Lock(S->Mu);
    auto It = S->InSlot.find(Id);
    if (S->Live.erase(Id)) {
      Answer = true;
    } else if (It != S->InSlot.end() && S->CancelledInSlot.insert(Id).second &&
               It->second.Written) {
      Answer = true;
      if (S->Running[It->second.Slot] == Id)
        S->killForCancel(It->second.Slot);
    }
  }
  if (Answer)
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
  if (S->Verbose) {
    std::string Msg;
    raw_string_ostream(Msg)
        << S->Jobs << " jobs on " << S->Slots.size() << " worker slots: "
        << S->ModulesSent << " modules sent, " << S->ModulesHeld
        << " named as held, " << S->BytesSent << " bytes written, at most "
        << S->MostQueued << " jobs queued";
    S->Engine->log(S->Engine->ctx, Msg.c_str());
  }
  delete S;
}

// Paced: a slot takes the largest job queued, so a queue of some thousand
// jobs orders them as well as the whole link's would.
const dtlto_plugin LocalPlugin = {DTLTO_PLUGIN_ABI_VERSION,
                                  DTLTO_PLUGIN_PACED,
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
