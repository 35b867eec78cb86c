//===- KeptMemory.h - Memory for what a worker keeps between jobs ---------===//
//
// A dtlto-backend worker (--batch, or --memory for the local plugin) runs
// its jobs and keeps modules between them on one thread, so both would come
// from that thread's malloc arena. The jobs make and free memory by the
// million; what the worker keeps (for each module it holds: a cache entry,
// the buffer object over its mapped bytes, its name; a few hundred bytes,
// thousands of them, dropped and replaced as a large link goes on) would lie
// scattered among the jobs' memory and fragment the arena. These small
// objects come from pages of their own instead, mapped here, in size
// classes of 16 bytes with a free list each. Not thread-safe: one thread at
// a time uses the worker's cache.
//
//===----------------------------------------------------------------------===//

#ifndef DTLTO_BACKEND_KEPTMEMORY_H
#define DTLTO_BACKEND_KEPTMEMORY_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/AllocatorBase.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/Memory.h"
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <new>

namespace dtlto {

class KeptMemory {
  static constexpr size_t Step = 16, Largest = 1024, PageRun = 256 << 10;
  std::array<void *, Largest / Step> Free{};
  char *Next = nullptr, *End = nullptr;

  // 1 for 0 to 16 bytes, 2 for 17 to 32, ...
  static size_t sizeClass(size_t Size) {
    return std::max<size_t>(1, (Size + Step - 1) / Step);
  }

public:
  /// Size bytes, aligned to 16; from malloc past Largest (rare: a path of
  /// a kilobyte).
  void *allocate(size_t Size) {
    if (Size > Largest)
      return ::operator new(Size);
    size_t C = sizeClass(Size);
    if (void *P = Free[C - 1]) {
      Free[C - 1] = *static_cast<void **>(P);
      return P;
    }
    size_t Bytes = C * Step;
    if (size_t(End - Next) < Bytes) {
      std::error_code EC;
      llvm::sys::MemoryBlock Run = llvm::sys::Memory::allocateMappedMemory(
          PageRun, nullptr,
          llvm::sys::Memory::MF_READ | llvm::sys::Memory::MF_WRITE, EC);
      if (EC)
        llvm::report_bad_alloc_error("dtlto-backend: out of memory");
      Next = static_cast<char *>(Run.base());
      End = Next + PageRun;
    }
    void *P = Next;
    Next += Bytes;
    return P;
  }

  void deallocate(void *P, size_t Size) {
    if (!P)
      return;
    if (Size > Largest) {
      ::operator delete(P);
      return;
    }
    size_t C = sizeClass(Size);
    *static_cast<void **>(P) = Free[C - 1];
    Free[C - 1] = P;
  }

  /// The worker's one pool. Never freed: the worker exits without freeing
  /// what it holds.
  static KeptMemory &get() {
    static KeptMemory *M = new KeptMemory;
    return *M;
  }
};

/// An LLVM allocator (for StringMap) over the worker's KeptMemory.
struct KeptAllocator : llvm::AllocatorBase<KeptAllocator> {
  void *Allocate(size_t Size, size_t Alignment) {
    if (Alignment > 16)
      llvm::report_fatal_error("KeptAllocator: alignment above 16");
    return KeptMemory::get().allocate(Size);
  }
  using AllocatorBase<KeptAllocator>::Allocate;
  void Deallocate(const void *P, size_t Size, size_t /*Alignment*/) {
    KeptMemory::get().deallocate(const_cast<void *>(P), Size);
  }
  using AllocatorBase<KeptAllocator>::Deallocate;
};

/// A base for the kept objects' own operator new and delete.
struct Kept {
  static void *operator new(size_t Size) {
    return KeptMemory::get().allocate(Size);
  }
  static void operator delete(void *P, size_t Size) {
    KeptMemory::get().deallocate(P, Size);
  }
};

/// A kept object's name (a module file's path), NUL-terminated.
class KeptName {
  char *Data;
  size_t Size;

public:
  explicit KeptName(llvm::StringRef S) : Size(S.size()) {
    Data = static_cast<char *>(KeptMemory::get().allocate(Size + 1));
    memcpy(Data, S.data(), Size);
    Data[Size] = 0;
  }
  KeptName(const KeptName &) = delete;
  KeptName &operator=(const KeptName &) = delete;
  ~KeptName() { KeptMemory::get().deallocate(Data, Size + 1); }
  llvm::StringRef str() const { return llvm::StringRef(Data, Size); }
};

} // namespace dtlto

#endif
