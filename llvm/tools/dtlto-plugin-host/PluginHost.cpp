//===- PluginHost.cpp - Runs a distributor plugin on the engine's channels ===//
//
// See PluginHost.h. One Host per link; it reads the job channel on the
// thread that runs it and calls the plugin from there, never from two
// threads at once; the plugin reports from any thread, through callbacks
// that write the event channel under one lock (in the linker: that hand
// the event to the engine's mailbox). Whatever fails ends the run with a
// message and an exit code, as the process would have: the same code runs
// as a process and, in the linker, on a thread.
//
//===----------------------------------------------------------------------===//

#include "dtlto/PluginHost.h"
#include "LocalPlugin.h"
#include "dtlto/Plugin.h"
#include "dtlto/WriteAll.h"
#include "dtlto/dtlto-plugin.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include <cerrno>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <memory>
#include <mutex>
#include <poll.h>
#include <string>
#include <unistd.h>
#include <utility>
#include <vector>

using namespace llvm;

namespace dtlto {
namespace {

/// One job while the plugin has it.
struct HostJob {
  std::string Frame;         // the line, then the inputs' bytes (not in place)
  HostMailbox::InPlace Held; // in the linker: the inputs, where they are
  uint64_t Bytes = 0;        // what it counts in the paced queue
  std::vector<std::string> Strings;
  std::vector<const char *> Args;
  std::vector<dtlto_input> Inputs;
  std::vector<std::string> Written; // files the host wrote for it
  std::string Output;
  dtlto_job Job{};
  bool Final = false;
};

struct Host {
  explicit Host(const PluginHostSetup &Setup) : Setup(Setup) {}
  ~Host();
  const PluginHostSetup &Setup;
  int Jobs = -1, Events = -1;
  HostMailbox *Mailbox = nullptr; // in the linker, instead of Jobs and Events
  int Wake[2] = {-1, -1};         // wakes the host's poll (not with Mailbox)
  const dtlto_plugin *Plugin = nullptr;
  std::string PluginName;
  void *Session = nullptr;
  dtlto_engine Engine{};

  // The link.
  std::string LinkData;
  std::vector<std::string> LinkStrings;
  std::vector<const char *> LinkArgs;
  std::vector<std::string> NativeWritten;
  std::vector<const char *> PluginArgs;
  dtlto_link Link{};

  std::mutex Mu; // guards JobsById, Finals and the event writes
  DenseMap<uint64_t, std::unique_ptr<HostJob>> JobsById;
  std::vector<uint64_t> Finals; // reported final, not yet freed
  bool EndSeen = false;

  // A paced plugin (DTLTO_PLUGIN_PACED): while the frames of the jobs in
  // JobsById hold more than QueueBudget bytes, the job channel is not read,
  // and the engine keeps the jobs after them (by reference: it holds their
  // modules anyway). 0: not paced.
  uint64_t QueueBudget = 0;
  uint64_t QueueBytes = 0; // host thread only
  bool queueFull() const { return QueueBudget && QueueBytes > QueueBudget; }
  int ExitCode = 0; // what a failure ends the run with

  bool load(StringRef Spec);
  bool setQueueBudget();
  bool run();
  /// Says what went wrong; the run ends with Code.
  bool fail(int Code, const Twine &Msg);

  std::string Pending; // bytes read from the job channel, not yet used
  // In the linker: the inputs of the frame whose line is in Pending.
  HostMailbox::InPlace Held;
  bool readMore();
  bool waitForMore();
  bool openSession(const json::Object &L, std::string Payload);
  bool submit(const json::Object &O, std::string Frame, size_t LineEnd,
              HostMailbox::InPlace Held);
  void freeFinals();
  bool allFinal();
  /// Final: the job's last report (done, failed without retry, cancelled).
  void event(uint64_t Id, StringRef Kind, json::Object Extra = {},
             StringRef Payload = "", bool Final = false);
  void wakeHost();
  HostJob *find(uint64_t Id);
};

// The callbacks (any thread).
void onAccepted(void *Ctx, uint64_t Id) {
  static_cast<Host *>(Ctx)->event(Id, "accepted");
}
void onStarted(void *Ctx, uint64_t Id, const char *Worker) {
  json::Object Extra;
  if (Worker)
    Extra["worker"] = Worker;
  static_cast<Host *>(Ctx)->event(Id, "started", std::move(Extra));
}
void onDone(void *Ctx, uint64_t Id, dtlto_buffer Object) {
  Host &H = *static_cast<Host *>(Ctx);
  StringRef Bytes(static_cast<const char *>(Object.data),
                  Object.data ? Object.size : 0);
  std::unique_ptr<MemoryBuffer> FromFile;
  if (Bytes.empty() && (H.Plugin->flags & DTLTO_PLUGIN_OUTPUT_FILES)) {
    std::string Output;
    {
      std::lock_guard<std::mutex> Lock(H.Mu);
      if (HostJob *J = H.find(Id))
        Output = J->Output;
    }
    if (!Output.empty()) {
      ErrorOr<std::unique_ptr<MemoryBuffer>> Buf = MemoryBuffer::getFile(
          Output, /*IsText=*/false, /*RequiresNullTerminator=*/false);
      if (Buf) {
        FromFile = std::move(*Buf);
        Bytes = FromFile->getBuffer();
      }
      sys::fs::remove(Output);
    }
  }
  H.event(Id, "done", json::Object{{"bytes", int64_t(Bytes.size())}}, Bytes,
          /*Final=*/true);
}
void onFailed(void *Ctx, uint64_t Id, const char *Reason, int Retry) {
  Host &H = *static_cast<Host *>(Ctx);
  json::Object Extra{{"retry", Retry != 0}};
  if (Reason)
    Extra["reason"] = Reason;
  H.event(Id, "failed", std::move(Extra), "", /*Final=*/!Retry);
}
void onCancelled(void *Ctx, uint64_t Id) {
  static_cast<Host *>(Ctx)->event(Id, "cancelled", {}, "", /*Final=*/true);
}
void onLog(void *Ctx, const char *Msg) {
  Host &H = *static_cast<Host *>(Ctx);
  std::lock_guard<std::mutex> Lock(H.Mu);
  errs() << H.Setup.Prefix << ": " << H.PluginName << ": " << (Msg ? Msg : "")
         << "\n";
  errs().flush();
}

bool Host::fail(int Code, const Twine &Msg) {
  {
    std::lock_guard<std::mutex> Lock(Mu);
    errs() << Setup.Prefix << ": error: " << Msg << "\n";
    errs().flush();
  }
  ExitCode = Code;
  return false;
}

Host::~Host() {
  for (int Fd : Wake)
    if (Fd >= 0)
      close(Fd);
}

HostJob *Host::find(uint64_t Id) {
  auto It = JobsById.find(Id);
  return It == JobsById.end() ? nullptr : It->second.get();
}

// One event line (and the object after a done). Reports after a job is
// final are dropped: the header promises that. A final job is freed (and
// the host may end) only once its event is out: the event channel is
// closed when the host ends, and the engine would never see that event.
void Host::event(uint64_t Id, StringRef Kind, json::Object Extra,
                 StringRef Payload, bool Final) {
  std::unique_lock<std::mutex> Lock(Mu);
  HostJob *J = find(Id);
  if (!J || J->Final)
    return;
  J->Final = Final;
  Extra["id"] = int64_t(Id);
  Extra["event"] = Kind;
  std::string Line;
  raw_string_ostream OS(Line);
  OS << json::Value(std::move(Extra)) << "\n";
  if (Mailbox) {
    // The engine's handling of the event runs in this call (the object is
    // checked and added to the link): not under the lock the host's thread
    // and the other reporters need.
    Lock.unlock();
    Mailbox->event(Line, Payload);
    if (!Final)
      return;
    Lock.lock();
  } else {
    writeAll(Events, {Line, Payload});
  }
  if (!Final)
    return;
  Finals.push_back(Id);
  Lock.unlock();
  wakeHost();
}

void Host::wakeHost() {
  if (Mailbox)
    return Mailbox->wake();
  char C = 0;
  (void)!write(Wake[1], &C, 1);
}

bool Host::load(StringRef Spec) {
  dtlto_plugin_entry_fn Entry = nullptr;
  if (Spec.consume_front("builtin:")) {
    if (Spec != "local")
      return fail(PluginLoadFailedExitCode,
          "no built-in DTLTO distributor plugin is called '" + Spec + "'");
    Entry = dtlto::localPluginEntry;
    PluginName = ("builtin:" + Spec).str();
  } else {
    PluginName = Spec.str();
    void *Handle = dlopen(PluginName.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!Handle)
      return fail(PluginLoadFailedExitCode,
          "cannot load the DTLTO distributor plugin '" + Spec +
              "': " + dlerror() +
              "; check that the libraries it needs are installed (ldd)");
    Entry = reinterpret_cast<dtlto_plugin_entry_fn>(
        dlsym(Handle, DTLTO_PLUGIN_ENTRY_SYMBOL));
    if (!Entry)
      return fail(PluginLoadFailedExitCode,
          "the DTLTO distributor plugin '" + Spec +
              "' does not export " DTLTO_PLUGIN_ENTRY_SYMBOL
              " (see dtlto-plugin.h)");
  }
  Plugin = Entry(DTLTO_PLUGIN_ABI_VERSION);
  if (!Plugin)
    return fail(PluginLoadFailedExitCode,
        "the DTLTO distributor plugin '" + PluginName +
            "' cannot speak plugin ABI version " +
            Twine(DTLTO_PLUGIN_ABI_VERSION) +
            ", the one this dtlto speaks; rebuild it against this dtlto's "
            "dtlto-plugin.h");
  if (Plugin->abi_version != DTLTO_PLUGIN_ABI_VERSION)
    return fail(PluginLoadFailedExitCode,
        "the DTLTO distributor plugin '" + PluginName +
            "' is built for plugin ABI version " + Twine(Plugin->abi_version) +
            ", but this dtlto speaks version " +
            Twine(DTLTO_PLUGIN_ABI_VERSION) +
            "; rebuild it against this dtlto's dtlto-plugin.h");
  if (!Plugin->open || !Plugin->submit || !Plugin->cancel ||
      !Plugin->end_of_jobs || !Plugin->close)
    return fail(PluginLoadFailedExitCode,
        "the DTLTO distributor plugin '" + PluginName +
            "' leaves a function of its dtlto_plugin empty; every one is "
            "required (dtlto-plugin.h)");
  if (Plugin->name && *Plugin->name)
    PluginName += std::string(" (") + Plugin->name + ")";
  return true;
}

// DTLTO_PLUGIN_QUEUE_MIB, for a paced plugin.
bool Host::setQueueBudget() {
  if (!(Plugin->flags & DTLTO_PLUGIN_PACED))
    return true;
  const char *Text = getenv("DTLTO_PLUGIN_QUEUE_MIB");
  uint64_t MiB = 64;
  if (Text && (StringRef(Text).getAsInteger(10, MiB) || MiB == 0 ||
               MiB >= (uint64_t(1) << 40)))
    return fail(1, "DTLTO_PLUGIN_QUEUE_MIB='" + Twine(Text) +
                       "' is not a size in MiB (a whole number, at least 1: "
                       "how much of the jobs' inputs the plugin may hold)");
  QueueBudget = MiB << 20;
  return true;
}

// Waits for more of the job channel, or for a job to become final (which
// frees the job, and lets a full queue take more); false once the engine
// has closed the channel. In the linker, a job that becomes final wakes
// the host only when that is what it waits for: a full queue, or the end.
bool Host::waitForMore() {
  bool Full = queueFull();
  if (Mailbox)
    return Mailbox->wait(Full ? nullptr : &Pending, &Held, Full || EndSeen) !=
           HostMailbox::Got::Closed;
  struct pollfd P[2] = {{Jobs, Full ? short(0) : short(POLLIN), 0},
                        {Wake[0], POLLIN, 0}};
  if (poll(P, 2, -1) < 0) {
    if (errno == EINTR)
      return true;
    return fail(1, Twine("poll: ") + strerror(errno));
  }
  if (P[1].revents) {
    char Buf[256];
    (void)!read(Wake[0], Buf, sizeof(Buf));
  }
  // A full queue still hears the engine hang up (POLLHUP).
  return !P[0].revents || (!Full && readMore());
}

// Reads what the job channel has; false at its end.
bool Host::readMore() {
  char Buf[1 << 16];
  for (;;) {
    ssize_t N = read(Jobs, Buf, sizeof(Buf));
    if (N < 0 && errno == EINTR)
      continue;
    if (N <= 0)
      return false;
    Pending.append(Buf, N);
    return true;
  }
}

uint64_t linkBytes(const json::Object &O) {
  const json::Object *L = O.getObject("link");
  if (!L)
    return 0;
  return L->getInteger("backend_config").value_or(0);
}

uint64_t jobBytes(const json::Object &O) {
  uint64_t Sum = 0;
  if (const json::Array *Sizes = O.getArray("sizes"))
    for (const json::Value &V : *Sizes)
      Sum += V.getAsInteger().value_or(0);
  return Sum;
}

bool isFile(StringRef Path) { return sys::fs::is_regular_file(Path); }

// Writes Data at Path for a plugin that wants files, unless a file is there.
bool writeMissing(StringRef Path, StringRef Data,
                  std::vector<std::string> &Written) {
  if (Path.empty() || isFile(Path))
    return true;
  std::error_code EC;
  raw_fd_ostream OS(Path, EC, sys::fs::OF_None);
  if (EC)
    return false;
  Written.push_back(Path.str());
  OS << Data;
  OS.close();
  return !OS.has_error();
}

bool Host::openSession(const json::Object &O, std::string Payload) {
  const json::Object *L = O.getObject("link");
  if (!L)
    return fail(1, "the engine sent no link first");
  LinkData = std::move(Payload);
  size_t ConfigSize = L->getInteger("backend_config").value_or(0);
  LinkStrings.push_back(L->getString("linker_output").value_or("").str());
  LinkStrings.push_back(L->getString("triple").value_or("").str());
  if (const json::Array *A = L->getArray("args"))
    for (const json::Value &V : *A)
      LinkStrings.push_back(V.getAsString().value_or("").str());
  for (size_t I = 2; I < LinkStrings.size(); ++I)
    LinkArgs.push_back(LinkStrings[I].c_str());
  Link.linker_output = LinkStrings[0].c_str();
  Link.triple = LinkStrings[1].c_str();
  Link.args = LinkArgs.data();
  Link.num_args = LinkArgs.size();
  Link.backend_config = {LinkData.data(), ConfigSize};
  Link.dtlto_backend =
      Setup.Backend.empty() ? nullptr : Setup.Backend.c_str();

  if (Plugin->flags & DTLTO_PLUGIN_INPUT_FILES)
    if (const json::Array *N = L->getArray("native_files"); N && N->size() == 1)
      if (!writeMissing((*N)[0].getAsString().value_or(""),
                        StringRef(LinkData).substr(0, ConfigSize),
                        NativeWritten))
        return fail(1, "cannot write '" +
                           (*N)[0].getAsString().value_or("") +
                           "' for the plugin");

  Engine = {this, onAccepted, onStarted, onDone, onFailed, onCancelled, onLog};
  for (const std::string &A : Setup.Args)
    PluginArgs.push_back(A.c_str());
  char Err[1024] = "";
  Session = Plugin->open(&Link, &Engine, PluginArgs.data(), PluginArgs.size(),
                         Err, sizeof(Err));
  if (!Session)
    return fail(PluginLoadFailedExitCode,
                "the DTLTO distributor plugin '" + PluginName +
                    "' refused the link: " +
                    (*Err ? Err : "it gave no reason"));
  return true;
}

bool Host::submit(const json::Object &O, std::string Frame, size_t LineEnd,
                  HostMailbox::InPlace Held) {
  auto J = std::make_unique<HostJob>();
  J->Frame = std::move(Frame);
  J->Held = std::move(Held);
  uint64_t Id = O.getInteger("id").value_or(0);
  auto Strings = [&](StringRef Key) {
    std::vector<std::string> Out;
    if (const json::Array *A = O.getArray(Key))
      for (const json::Value &V : *A)
        Out.push_back(V.getAsString().value_or("").str());
    return Out;
  };
  std::vector<std::string> Args = Strings("args"), Names = Strings("inputs"),
                           Outputs = Strings("outputs");
  std::vector<uint64_t> Sizes;
  if (const json::Array *A = O.getArray("sizes"))
    for (const json::Value &V : *A)
      Sizes.push_back(V.getAsInteger().value_or(0));
  // The strings first, so that no pointer into them moves.
  J->Strings = std::move(Args);
  size_t NumArgs = J->Strings.size();
  J->Strings.insert(J->Strings.end(), Names.begin(), Names.end());
  J->Output = Outputs.empty() ? "" : Outputs[0];
  for (size_t I = 0; I < NumArgs; ++I)
    J->Args.push_back(J->Strings[I].c_str());
  bool WantFiles = Plugin->flags & DTLTO_PLUGIN_INPUT_FILES;
  // Inputs in place are the line's inputs, one part each, of its sizes.
  bool InPlace = !J->Held.Parts.empty();
  bool Fits =
      J->Held.Parts.size() == Names.size() && Sizes.size() >= Names.size();
  for (size_t I = 0; InPlace && Fits && I < Names.size(); ++I)
    Fits = J->Held.Parts[I].size() == Sizes[I];
  if (InPlace && !Fits)
    return fail(1, "the engine sent job " + Twine(Id) +
                       " with inputs in memory that do not match its line");
  size_t Off = LineEnd;
  for (size_t I = 0; I < Names.size(); ++I) {
    const std::string &Name = J->Strings[NumArgs + I];
    uint64_t Size = I < Sizes.size() ? Sizes[I] : 0;
    StringRef Data =
        InPlace ? J->Held.Parts[I] : StringRef(J->Frame).substr(Off, Size);
    Off += Size;
    if (WantFiles && !writeMissing(Name, Data, J->Written))
      return fail(1, "cannot write '" + Name + "' for the plugin");
    bool OnDisk = WantFiles || isFile(Name);
    J->Inputs.push_back(
        {Name.c_str(), OnDisk ? Name.c_str() : nullptr, {Data.data(), Size}});
  }
  J->Job.id = Id;
  J->Job.module_id = J->Inputs.empty() ? "" : J->Inputs[0].name;
  J->Job.args = J->Args.data();
  J->Job.num_args = J->Args.size();
  J->Job.inputs = J->Inputs.data();
  J->Job.num_inputs = J->Inputs.size();
  J->Job.output_path = J->Output.c_str();
  J->Job.input_bytes = O.getInteger("input_bytes").value_or(0);
  const dtlto_job *Job = &J->Job;
  // Inputs in place count as if copied: the queue paces the plugin alike
  // in the linker and in a process (the local plugin picks among the jobs
  // it holds).
  J->Bytes = J->Frame.size() + (InPlace ? jobBytes(O) : 0);
  QueueBytes += J->Bytes;
  {
    std::lock_guard<std::mutex> Lock(Mu);
    JobsById[Id] = std::move(J);
  }
  if (Plugin->submit(Session, Job) != 0)
    onFailed(this, Id, "the plugin refused the job", 0);
  return true;
}

// Frees what the plugin reported final: the header says it no longer
// reads it.
void Host::freeFinals() {
  std::vector<std::unique_ptr<HostJob>> Gone;
  {
    std::lock_guard<std::mutex> Lock(Mu);
    for (uint64_t Id : Finals) {
      auto It = JobsById.find(Id);
      Gone.push_back(std::move(It->second));
      JobsById.erase(It);
    }
    Finals.clear();
  }
  for (const std::unique_ptr<HostJob> &J : Gone) {
    QueueBytes -= J->Bytes;
    for (const std::string &F : J->Written)
      sys::fs::remove(F);
  }
}

bool Host::allFinal() {
  std::lock_guard<std::mutex> Lock(Mu);
  return JobsById.empty() && Finals.empty();
}

bool Host::run() {
  bool Opened = false;
  for (;;) {
    freeFinals();
    if (EndSeen && allFinal())
      break;
    // Frames complete in Pending. A full queue leaves them there, and the
    // cancels and the end behind them: those come in the engine's order.
    // What was used goes once at the end: taking each frame from the front
    // would move the rest every time.
    size_t Used = 0;
    while (!queueFull()) {
      StringRef Rest = StringRef(Pending).substr(Used);
      size_t NL = Rest.find('\n');
      if (NL == StringRef::npos)
        break;
      // The engine ends each frame, bytes included, with a newline.
      if (Rest.take_front(NL).trim().empty()) {
        Used += NL + 1;
        continue;
      }
      Expected<json::Value> V = json::parse(Rest.take_front(NL));
      if (!V)
        return fail(1, "the engine sent a line that is not JSON: " +
                           toString(V.takeError()));
      const json::Object *O = V->getAsObject();
      if (!O)
        return fail(1, "the engine sent a line that is not a JSON object");
      uint64_t Bytes = Opened ? jobBytes(*O) : linkBytes(*O);
      // In the linker a job's inputs come in place (Held), not after its
      // line; submit() checks them against it.
      HostMailbox::InPlace InPlace = std::exchange(Held, {});
      if (!InPlace.Parts.empty()) {
        if (!O->get("id"))
          return fail(1, "the engine sent inputs in memory with a line that "
                         "is no job");
        Bytes = 0;
      }
      if (Rest.size() < NL + 1 + Bytes)
        break;
      // A frame that is all of Pending (in the linker, usually) is taken
      // as it is, not copied.
      std::string Frame;
      if (Used == 0 && Pending.size() == NL + 1 + Bytes) {
        Frame = std::move(Pending);
        Pending.clear();
      } else {
        Frame = Rest.take_front(NL + 1 + Bytes).str();
        Used += NL + 1 + Bytes;
      }
      if (!Opened) {
        if (!openSession(*O, Frame.substr(NL + 1)))
          return false;
        Opened = true;
      } else if (std::optional<int64_t> C = O->getInteger("cancel")) {
        bool Live;
        {
          std::lock_guard<std::mutex> Lock(Mu);
          HostJob *J = find(*C);
          Live = J && !J->Final;
        }
        if (Live)
          Plugin->cancel(Session, *C);
      } else if (O->get("end")) {
        EndSeen = true;
        Plugin->end_of_jobs(Session);
      } else if (O->get("id")) {
        if (!submit(*O, std::move(Frame), NL + 1, std::move(InPlace)))
          return false;
      }
    }
    Pending.erase(0, Used);
    if (EndSeen && allFinal())
      continue;
    // A full queue reads no job and waits for one to become final.
    if (!waitForMore()) {
      // The engine keeps the job channel open until we are done (cancels
      // may follow the end): closed earlier, it is stopping, and wants
      // nothing more. In the linker this is how it stops us, and a full
      // queue must hear it too: its jobs may never end (a hung worker),
      // and the plugin's close is what stops their processes.
      if (!ExitCode)
        ExitCode = 1;
      return false;
    }
  }
  return true;
}

} // namespace

int runPluginHost(const PluginHostSetup &Setup) {
  Host H(Setup);
  H.Jobs = Setup.JobsFd;
  H.Events = Setup.EventsFd;
  H.Mailbox = Setup.Mailbox;
  if (!H.Mailbox && pipe2(H.Wake, O_CLOEXEC)) {
    H.fail(1, Twine("pipe: ") + strerror(errno));
    return H.ExitCode;
  }
  if (!H.load(Setup.Plugin) || !H.setQueueBudget())
    return H.ExitCode;
  bool Done = H.run();
  // A session ends with close, whatever ended it; then nothing the plugin
  // had is read again.
  if (H.Session)
    H.Plugin->close(H.Session);
  H.Session = nullptr;
  H.freeFinals();
  // A run that ended early leaves jobs that never became final: what was
  // written for them goes too.
  for (auto &KV : H.JobsById)
    for (const std::string &F : KV.second->Written)
      sys::fs::remove(F);
  H.JobsById.clear();
  for (const std::string &F : H.NativeWritten)
    sys::fs::remove(F);
  return Done ? 0 : H.ExitCode;
}

} // namespace dtlto

