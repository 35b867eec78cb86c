//===- WriteAll.h - Whole writes to a pipe or socket ------------*- C++ -*-===//
//
// The host writes to the engine: every byte, or it learns that the engine
// has gone. (The local plugin writes to its workers while it reads from
// them: Worker::write in LocalPlugin.cpp.)
//
//===----------------------------------------------------------------------===//

#ifndef DTLTO_PLUGIN_HOST_WRITEALL_H
#define DTLTO_PLUGIN_HOST_WRITEALL_H

#include "llvm/ADT/StringRef.h"

#include <cerrno>
#include <unistd.h>

namespace dtlto {

/// Writes all of Data to Fd; false once the other end is gone.
inline bool writeAll(int Fd, llvm::StringRef Data) {
  while (!Data.empty()) {
    ssize_t N = ::write(Fd, Data.data(), Data.size());
    if (N < 0 && errno == EINTR)
      continue;
    if (N <= 0)
      return false;
    Data = Data.drop_front(N);
  }
  return true;
}

} // namespace dtlto

#endif
