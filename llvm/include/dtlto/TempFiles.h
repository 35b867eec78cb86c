//===- TempFiles.h - Names and lifetime of DTLTO temporary files ----------===//
//
// The one place that knows how DTLTO temporary files are named and where they
// live. Every file goes next to the linker output, so that a build system that
// cleans its output directory also cleans what a killed link left behind, and
// so that paths in the manifest stay relative when the output path is.
//
// Names follow LLVM 22 so that tools and people who know stock DTLTO find
// their way:
//   manifest:      <output stem>.<pid>.dist-file.json
//   side file:     <output stem>.<pid>.dist-file.dtlto.json (our distributors
//                  find it by the manifest's name)
//   dtlto-backend: <output stem>.<pid>.dtlto-config.json
//   object:        <module stem>.<task>.<pid>.native.o
//   index shard:   <object>.thinlto.bc
//   archive member / FatLTO bitcode:
//                  <member name>.<output stem>.<content hash>.o, where the
//                  member name is the module ID's file name without LLD's
//                  member offset: "lib.a(m.o)"
//                  (upstream-compatible mode: LLVM's own
//                  <module ID's file name>.<input number>.<PID in hex>.o)
//
// The copies of archive members are named by content, not by the linker's
// pid: their paths are recorded in the index shards of every job that imports
// from them, so a pid would make every such job new to a remote engine's
// action cache. They start with the module's in-process name, so that they
// sort as in-process ThinLTO's module IDs do (the importer's order, which
// places imported variables). The output stem keeps concurrent links of
// different outputs in one directory apart.
//
//===----------------------------------------------------------------------===//

#ifndef DTLTO_TEMPFILES_H
#define DTLTO_TEMPFILES_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include <mutex>
#include <string>
#include <vector>

namespace dtlto {

/// The directory all temporary files of a link go to ("" means the current
/// directory).
std::string tempDir(llvm::StringRef LinkerOutputFile);
std::string manifestPath(llvm::StringRef LinkerOutputFile);
/// The side file of the manifest at ManifestPath: "x.json" -> "x.dtlto.json".
std::string engineInfoPath(llvm::StringRef ManifestPath);
/// dtlto-backend's one input besides each job's own, once per link.
std::string backendConfigPath(llvm::StringRef LinkerOutputFile);
std::string objectPath(llvm::StringRef LinkerOutputFile,
                       llvm::StringRef ModuleID, unsigned Task);
std::string shardPath(llvm::StringRef ObjectPath);
/// The copy of a module whose bitcode is Bitcode and whose in-process name
/// is ModuleName ("lib.a(m.o)": copyName()).
std::string serializedInputPath(llvm::StringRef LinkerOutputFile,
                                llvm::StringRef ModuleName,
                                llvm::StringRef Bitcode);
/// The start of such a copy's name: ModuleID's file name, with the offset
/// of LLD's member IDs dropped ("lib.a(m.o at 88)" -> "lib.a(m.o)").
std::string copyName(llvm::StringRef ModuleID);
/// LLVM's own name for such a copy, used in upstream-compatible mode: the
/// file name of the module ID (e.g. "lib.a(m.o at 88)"), the number of
/// inputs added so far, and the linker's pid in upper-case hex.
std::string upstreamSerializedInputPath(llvm::StringRef LinkerOutputFile,
                                        llvm::StringRef ModuleID,
                                        unsigned InputNumber);
/// A thin archive stores its members by path relative to the archive. "."
/// and ".." are collapsed (as text, as LLVM does), so that a remote side
/// never needs the directories a path only passes through.
std::string thinArchiveMemberPath(llvm::StringRef ArchivePath,
                                  llvm::StringRef MemberName);

/// LLVM 22's index writer garbles non-ASCII bytes in module paths, so a
/// remote job could not load a module whose path has any: such inputs get an
/// ASCII-named temporary copy, like archive members.
bool isSafeModulePath(llvm::StringRef Path);

/// A set of temporary files that must not outlive the link: they are removed
/// when the set is destroyed, and by the signal handler if the linker is
/// interrupted (SIGINT, SIGTERM, ...; Signals.h). With Keep (--save-temps)
/// nothing is ever removed. Thread-safe: shards and objects are added from the
/// backend's thread pool.
class TempFileSet {
public:
  explicit TempFileSet(bool Keep) : Keep(Keep) {}
  ~TempFileSet() { removeAll(); }
  TempFileSet(const TempFileSet &) = delete;
  TempFileSet &operator=(const TempFileSet &) = delete;

  /// Registers Path before it is created, so that an interrupt between its
  /// creation and its registration cannot leak it.
  void add(llvm::StringRef Path);
  /// Drops Path without removing it: it could not be created, and whatever
  /// is there is not ours.
  void forget(llvm::StringRef Path);
  void removeAll();
  bool keep() const { return Keep; }

private:
  const bool Keep;
  std::mutex Mu;
  std::vector<std::string> Paths;
};

/// The temporary files a compiler that was writing one of ObjectPaths left
/// next to it: clang writes <object stem>-<random>.o.tmp and renames it, and
/// leaves it behind when it fails to write (a full disk) or is killed;
/// dtlto-backend writes <object>.tmp, left when it is killed (a cancelled
/// batch worker). Our
/// object names carry the linker's pid, so such files are the link's own.
std::vector<std::string>
strayCompilerFiles(llvm::ArrayRef<std::string> ObjectPaths);

/// Removes files registered with the signal handler (Signals.h) and
/// unregisters them; a no-op for Keep. Used by input preparation, which
/// keeps no TempFileSet.
void removeTempFiles(llvm::ArrayRef<std::string> Paths, bool Keep);

} // namespace dtlto

#endif
