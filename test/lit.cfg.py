# lit configuration of the dtlto suite. Tests run real clang-22, our linker
# (build/bin/ld.lld, build/bin/lld-link) and the distributors in utils/dtlto.
import os
import lit.formats
import lit.util

config.name = "dtlto"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".test", ".c", ".cpp", ".ll", ".py"]
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py.in", "CMakeLists.txt"]
config.test_source_root = os.path.dirname(__file__)

# Where the build is: CMake writes build/test/lit.site.cfg.py; ctest names it
# with --param, a developer running lit by hand gets the default build dir.
src_root = os.path.dirname(config.test_source_root)
site_path = lit_config.params.get(
    "dtlto_site_config", os.path.join(src_root, "build", "test", "lit.site.cfg.py"))
if not os.path.exists(site_path):
    lit_config.fatal(f"{site_path} is missing: configure the build first "
                     "(cmake -S . -B build -G Ninja && ninja -C build)")
site = {}
with open(site_path) as f:
    exec(f.read(), site)

obj_root = site["dtlto_obj_root"]
tools_dir = site["llvm_tools_dir"]
python = site["python_executable"]
config.test_exec_root = os.path.join(obj_root, "test", "output")

utils = os.path.join(src_root, "utils", "dtlto")
bindir = os.path.join(obj_root, "bin")
for tool in ("ld.lld", "lld-link"):
    if not os.path.exists(os.path.join(bindir, tool)):
        lit_config.fatal(f"{bindir}/{tool} is missing: build first (ninja -C build)")

config.environment["PATH"] = os.pathsep.join(
    [tools_dir, config.environment.get("PATH", os.environ.get("PATH", ""))])
# A stray LIBRARY_PATH (CUDA stubs on some machines) would add -L to links.
config.environment.pop("LIBRARY_PATH", None)
for var in ("HOME", "TMPDIR", "LANG", "LC_ALL", "MAKEFLAGS"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
# Tests must not inherit a user's engine settings.
for var in list(os.environ):
    if var.startswith("DTLTO_"):
        config.environment.pop(var, None)
# A job that fails must fail its test: the engine's local fallback (on by
# default for users) would hide it by compiling the job in the linker. The
# tests of the fallback itself turn it on.
config.environment["DTLTO_LOCAL_FALLBACK"] = "0"
# Likewise the linker's local slot (on by default for users with a streaming
# distributor) would take jobs from the distributor under test; the tests of
# local jobs ask for them, and local-jobs.test checks the default.
config.environment["DTLTO_LOCAL_JOBS"] = "0"

# A test that hangs fails by name once it has run for 15 minutes (ten
# times the longest test here), with what it printed so far, instead of
# holding the whole suite until CI gives up on it. lit needs psutil to
# end a test's processes (docs/packages.md installs it).
try:
    import psutil  # noqa: F401
    lit_config.maxIndividualTestTime = 900
except ImportError:
    lit_config.warning("python3-psutil is missing: no per-test time limit")


# The time limit cannot end a test whose output pipe a process outside its
# tree holds (a distributor or daemon left running after its parent died):
# lit waits for that pipe's end. The whole suite takes under 15 minutes on
# two cores; once it has run for 30 (--param hang_report_after=SECONDS),
# this names what is still running (the processes under lit, and any whose
# command line names this source or build tree), every 10 minutes, so that
# a hung CI run says which test and which process hung.
def _watch_for_hangs(lit_pid, trees, first=1800, every=600):
    import importlib.util
    import sys
    import time
    spec = importlib.util.spec_from_file_location(
        "procfs", os.path.join(src_root, "test", "Inputs", "procfs.py"))
    procfs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(procfs)
    time.sleep(first)
    while True:
        table = procfs.snapshot()
        def under_lit(pid):
            while pid in table and pid not in (0, 1):
                if pid == lit_pid:
                    return True
                pid = table[pid].ppid
            return False
        shown = [f"  {pid} (parent {row.ppid}, {row.seconds:.0f} s): {row.args[:400]}"
                 for pid, row in sorted(table.items())
                 if pid != lit_pid and (under_lit(pid) or any(t in row.args for t in trees))]
        sys.stderr.write("\nlit.cfg.py: the suite is still running; these processes "
                         "are:\n" + "\n".join(shown) + "\n")
        sys.stderr.flush()
        time.sleep(every)


import threading  # noqa: E402
if not getattr(lit_config, "dtlto_hang_watch", None):  # once per lit run
    lit_config.dtlto_hang_watch = threading.Thread(
        target=_watch_for_hangs, daemon=True,
        args=(os.getpid(), (src_root, obj_root),
              int(lit_config.params.get("hang_report_after", 1800))))
    lit_config.dtlto_hang_watch.start()

subst = config.substitutions
subst.append(("%ld.lld", os.path.join(bindir, "ld.lld")))
subst.append(("%lld-link", os.path.join(bindir, "lld-link")))
subst.append(("%stock-ld.lld", os.path.join(tools_dir, "ld.lld")))
subst.append(("%stock-lld-link", os.path.join(tools_dir, "lld-link")))
subst.append(("%stock-llvm-lto2", os.path.join(tools_dir, "llvm-lto2")))
subst.append(("%preload", os.path.join(obj_root, "lib", "libdtlto-preload.so")))
subst.append(("%forkserver", os.path.join(obj_root, "lib", "libdtlto-forkserver.so")))
subst.append(("%dtlto-backend", os.path.join(bindir, "dtlto-backend")))
subst.append(("%clangxx", os.path.join(tools_dir, "clang++")))
subst.append(("%clang", os.path.join(tools_dir, "clang")))
subst.append(("%python", python))
subst.append(("%local_py", os.path.join(utils, "local.py")))
subst.append(("%mock_py", os.path.join(utils, "mock.py")))
subst.append(("%validate_py", os.path.join(utils, "validate.py")))
subst.append(("%utils", utils))
subst.append(("%srcroot", src_root))
subst.append(("%llvm_tools", tools_dir))
subst.append(("%bindir", bindir))
subst.append(("%inputs", os.path.join(config.test_source_root, "Inputs")))

if os.getuid() == 0:
    config.available_features.add("root")
