//===- WriteAll.h - Whole writes to a pipe or socket ------------*- C++ -*-===//
//
// The engine's job channel and the plugin host's events: every byte, in as
// few system calls as the other end takes, or word that it has gone. (The
// local plugin writes to its workers while it reads from them:
// Worker::write in LocalPlugin.cpp.)
//
//===----------------------------------------------------------------------===//

#ifndef DTLTO_WRITEALL_H
#define DTLTO_WRITEALL_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <initializer_list>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

namespace dtlto {

/// Writes every byte Iov names to Fd, from where it lies; false once the
/// other end is gone. Iov is used up. On a socket (Socket) a write after the
/// reader has gone is an error (MSG_NOSIGNAL), not a SIGPIPE that would
/// kill the writer: the linker writes its job channel so.
inline bool writeAll(int Fd, llvm::MutableArrayRef<iovec> Iov,
                     bool Socket = false) {
  size_t I = 0;
  while (I < Iov.size()) {
    int Count = std::min<size_t>(Iov.size() - I, IOV_MAX);
    ssize_t N;
    if (Socket) {
      msghdr M = {};
      M.msg_iov = &Iov[I];
      M.msg_iovlen = Count;
      N = ::sendmsg(Fd, &M, MSG_NOSIGNAL);
    } else {
      N = ::writev(Fd, &Iov[I], Count);
    }
    if (N < 0 && errno == EINTR)
      continue;
    if (N <= 0)
      return false;
    // Past what was written, in the middle of a piece maybe.
    for (size_t Left = N; Left;) {
      size_t Take = std::min(Left, Iov[I].iov_len);
      Iov[I].iov_base = static_cast<char *>(Iov[I].iov_base) + Take;
      Iov[I].iov_len -= Take;
      Left -= Take;
      if (!Iov[I].iov_len)
        ++I;
    }
  }
  return true;
}

/// The same for Parts, in order, as one write where the other end takes it
/// (an event's line and its object: the engine wakes once for both).
inline bool writeAll(int Fd, std::initializer_list<llvm::StringRef> Parts) {
  llvm::SmallVector<iovec, 4> Iov;
  for (llvm::StringRef P : Parts)
    if (!P.empty())
      Iov.push_back({const_cast<char *>(P.data()), P.size()});
  return writeAll(Fd, Iov);
}

} // namespace dtlto

#endif
