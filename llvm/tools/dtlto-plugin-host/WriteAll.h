//===- WriteAll.h - Whole writes to a pipe or socket ------------*- C++ -*-===//
//
// The host writes to the engine: every byte, or it learns that the engine
// has gone. (The local plugin writes to its workers while it reads from
// them: Worker::write in LocalPlugin.cpp.)
//
//===----------------------------------------------------------------------===//

#ifndef DTLTO_PLUGIN_HOST_WRITEALL_H
#define DTLTO_PLUGIN_HOST_WRITEALL_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cerrno>
#include <initializer_list>
#include <sys/uio.h>
#include <unistd.h>

namespace dtlto {

/// Writes all of Parts to Fd, in order, in as few system calls as the
/// other end takes (an event line and its object go in one, so that the
/// engine wakes once for both); false once the other end is gone.
inline bool writeAll(int Fd, std::initializer_list<llvm::StringRef> Parts) {
  llvm::SmallVector<iovec, 4> Iov;
  for (llvm::StringRef P : Parts)
    if (!P.empty())
      Iov.push_back({const_cast<char *>(P.data()), P.size()});
  iovec *Next = Iov.data();
  int Count = Iov.size();
  while (Count > 0) {
    ssize_t N = ::writev(Fd, Next, Count);
    if (N < 0 && errno == EINTR)
      continue;
    if (N <= 0)
      return false;
    // Skip what was written: whole parts, then into the first one left.
    for (; Count > 0 && size_t(N) >= Next->iov_len; ++Next, --Count)
      N -= Next->iov_len;
    if (Count > 0) {
      Next->iov_base = static_cast<char *>(Next->iov_base) + N;
      Next->iov_len -= N;
    }
  }
  return true;
}

} // namespace dtlto

#endif
