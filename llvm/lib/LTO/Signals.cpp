//===- Signals.cpp - What the engine does when a signal stops the process -===//

#include "dtlto/Signals.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Allocator.h"
#include "llvm/Support/Signals.h"
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <unistd.h>
#include <vector>

using namespace llvm;

namespace dtlto {

//===----------------------------------------------------------------------===//
// Dispositions.
//===----------------------------------------------------------------------===//

// Which of the signals LLVM removes temporary files on (the stop signals and
// SIGUSR2) the linker was started with ignored (nohup, a background job of a
// non-interactive shell). Read before main(), before LLVM installs its
// handlers over them.
static const int InterruptSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR2};
static bool InitiallyIgnored[std::size(InterruptSignals)];
static const bool DispositionsRead = [] {
  for (size_t I = 0; I < std::size(InterruptSignals); ++I) {
    struct sigaction Current;
    if (sigaction(InterruptSignals[I], nullptr, &Current) == 0)
      InitiallyIgnored[I] = !(Current.sa_flags & SA_SIGINFO) &&
                            Current.sa_handler == SIG_IGN;
  }
  return true;
}();

bool startedIgnored(int Sig) {
  (void)DispositionsRead;
  for (size_t I = 0; I < std::size(InterruptSignals); ++I)
    if (InterruptSignals[I] == Sig)
      return InitiallyIgnored[I];
  return false;
}

void passSignalOn(const struct sigaction &Old, int Sig, siginfo_t *Info,
                  void *Context) {
  if ((Old.sa_flags & SA_SIGINFO) && Old.sa_sigaction)
    return Old.sa_sigaction(Sig, Info, Context);
  if (Old.sa_handler == SIG_IGN)
    return;
  if (Old.sa_handler != SIG_DFL)
    return Old.sa_handler(Sig);
  signal(Sig, SIG_DFL);
  raise(Sig);
}

//===----------------------------------------------------------------------===//
// Files removed on signals.
//===----------------------------------------------------------------------===//
//
// LLVM's sys::RemoveFileOnSignal keeps its files in a list that every
// registration walks to its end and every removal walks whole (comparing
// each name), and removed entries stay in it: the cost of a link's n
// temporary files grows as n squared. A link of 3,000 modules (7,500
// files: shards, objects, member copies) spent about 2 s on it, one of
// 30,000 modules would spend many minutes (30,000 registrations alone took
// 17 s in isolation). Here a registration and a removal cost O(1): each
// path sits in a slot of an append-only list of blocks, found again through
// a hash map; the signal handler walks the blocks and unlinks what the
// slots hold, with nothing but atomic loads and unlink().

namespace {
class SignalRemovals {
  static constexpr size_t BlockSize = 1024;
  struct Block {
    std::atomic<const char *> Slots[BlockSize] = {};
    std::atomic<Block *> Next{nullptr};
  };

  std::atomic<Block *> Head{nullptr};
  // Below: only under Mu, never read by the handler.
  std::mutex Mu;
  Block *Tail = nullptr;
  size_t TailUsed = BlockSize;
  std::vector<std::atomic<const char *> *> FreeSlots;
  StringMap<SmallVector<std::atomic<const char *> *, 1>> Where;
  // The paths' bytes. Never freed while the process runs: a handler on
  // another thread may be reading a path just removed. A link's paths take
  // about 100 bytes a file.
  BumpPtrAllocator Names;

public:
  void add(StringRef Path) {
    std::lock_guard<std::mutex> Lock(Mu);
    std::atomic<const char *> *Slot;
    if (!FreeSlots.empty()) {
      Slot = FreeSlots.back();
      FreeSlots.pop_back();
    } else {
      if (TailUsed == BlockSize) {
        Block *B = new Block;
        if (Tail)
          Tail->Next.store(B, std::memory_order_release);
        else
          Head.store(B, std::memory_order_release);
        Tail = B;
        TailUsed = 0;
      }
      Slot = &Tail->Slots[TailUsed++];
    }
    char *Name = Names.Allocate<char>(Path.size() + 1);
    std::memcpy(Name, Path.data(), Path.size());
    Name[Path.size()] = '\0';
    Where[Path].push_back(Slot);
    Slot->store(Name, std::memory_order_release);
  }

  // Every registration of Path goes, as with sys::DontRemoveFileOnSignal.
  void remove(StringRef Path) {
    std::lock_guard<std::mutex> Lock(Mu);
    auto It = Where.find(Path);
    if (It == Where.end())
      return;
    for (std::atomic<const char *> *Slot : It->second) {
      Slot->store(nullptr, std::memory_order_release);
      FreeSlots.push_back(Slot);
    }
    Where.erase(It);
  }

  // Async-signal-safe.
  void unlinkAll() {
    for (Block *B = Head.load(std::memory_order_acquire); B;
         B = B->Next.load(std::memory_order_acquire))
      for (std::atomic<const char *> &Slot : B->Slots)
        if (const char *Name = Slot.load(std::memory_order_acquire))
          ::unlink(Name);
  }
};
} // namespace

// Never destroyed: a signal may come while static destructors run.
static SignalRemovals &removals() {
  static SignalRemovals *R = new SignalRemovals;
  return *R;
}

static struct sigaction ReplacedActions[std::size(InterruptSignals)];

static void onRemovalSignal(int Sig, siginfo_t *Info, void *Context) {
  int SavedErrno = errno;
  removals().unlinkAll();
  errno = SavedErrno;
  size_t I = 0;
  while (InterruptSignals[I] != Sig)
    ++I;
  passSignalOn(ReplacedActions[I], Sig, Info, Context);
}

// A crash (SIGSEGV, SIGABRT, ...) goes through LLVM's handler, which runs
// these after removing its own files.
static void onCrash(void *) { removals().unlinkAll(); }

void installTempFileHandlers() {
  static std::once_flag Once;
  std::call_once(Once, [] {
    // LLVM's handlers first (registering a file installs them), so that
    // ours go on top of them and hand signals on to them.
    sys::RemoveFileOnSignal("");
    sys::DontRemoveFileOnSignal("");
    sys::AddSignalHandler(onCrash, nullptr);
    struct sigaction Ours;
    std::memset(&Ours, 0, sizeof(Ours));
    Ours.sa_sigaction = onRemovalSignal;
    Ours.sa_flags = SA_SIGINFO;
    sigemptyset(&Ours.sa_mask);
    for (size_t I = 0; I < std::size(InterruptSignals); ++I)
      if (!startedIgnored(InterruptSignals[I]))
        sigaction(InterruptSignals[I], &Ours, &ReplacedActions[I]);
  });
}

void registerTempFile(StringRef Path, bool Keep) {
  if (Keep)
    return;
  installTempFileHandlers();
  removals().add(Path);
}

void unregisterTempFile(StringRef Path) { removals().remove(Path); }

} // namespace dtlto
