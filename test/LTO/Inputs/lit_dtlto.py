# Substitutions shared by the engine tests (test/LTO) and the linker tests
# (test/lld); each directory's lit.local.cfg runs this file.
#
#   %{py}                the Python interpreter behind %python
#   %{rc}                --thinlto-remote-compiler=<clang-22>
#   %{dist-local}        local.py as the distributor (ELF spelling)
#   %{dist-print}        validate.py --print in front of local.py: prints the
#                        manifest on stdout, then runs the jobs
#   %{dist-mock}         mock.py; add --thinlto-distributor-arg=<its options>
#   %{coff-dist-local}, %{coff-dist-print}, %{coff-rc}   the lld-link spellings
#   %{helpers}           this directory (helper scripts shared by the tests)
#
# Distributors run as `<python> <script>`, so the tests do not depend on the
# scripts' execute bits (the tests that need a direct executable say so).
# Feature `mount-namespace`: `unshare -m` works, so a test can mount a
# read-only directory (root alone does not make a directory unwritable).
import os
import shutil
import subprocess


def _subst(name):
    return next(value for key, value in config.substitutions if key == name)


def _real_python(python):
    # %python may be a pyenv shim, a shell script that costs ~0.2 s a start;
    # distributors and helpers start often, so use the interpreter behind it.
    try:
        out = subprocess.run([python, "-c", "import sys; print(sys.executable)"],
                             capture_output=True, text=True, timeout=60)
        found = out.stdout.strip()
        return found if out.returncode == 0 and os.path.isfile(found) else python
    except (OSError, subprocess.SubprocessError):
        return python


def _dist(prefix, sep, python, *args):
    words = [f"{prefix}thinlto-distributor{sep}{python}"]
    words += [f"{prefix}thinlto-distributor-arg{sep}{a}" for a in args]
    return " ".join(words)


_python = _real_python(_subst("%python"))
_utils = _subst("%utils")
_local = os.path.join(_utils, "local.py")
_validate = os.path.join(_utils, "validate.py")
_mock = os.path.join(_utils, "mock.py")
_clang = _subst("%clang")

for _prefix, _sep, _name in (("--", "=", ""), ("/", ":", "coff-")):
    config.substitutions.append(
        (f"%{{{_name}dist-local}}", _dist(_prefix, _sep, _python, _local)))
    config.substitutions.append(
        (f"%{{{_name}dist-print}}",
         _dist(_prefix, _sep, _python, _validate, "--print", "--", _python, _local)))
    config.substitutions.append(
        (f"%{{{_name}dist-mock}}", _dist(_prefix, _sep, _python, _mock)))
    config.substitutions.append(
        (f"%{{{_name}rc}}", f"{_prefix}thinlto-remote-compiler{_sep}{_clang}"))
config.substitutions.append(("%{py}", _python))
config.substitutions.append(
    ("%{helpers}", os.path.join(config.test_source_root, "LTO", "Inputs")))

# Feature "mount-namespace": private mount namespaces (root, util-linux's
# unshare, mount). What is missing goes to environment.test, which fails.
_missing = [f"{tool} ({pkg})" for tool, pkg in (("unshare", "util-linux"),
                                                ("mount", "mount"))
            if not shutil.which(tool)]
if not _missing and subprocess.run(
        ["unshare", "-m", "--", "true"], stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL).returncode != 0:
    _missing.append("a private mount namespace (unshare -m needs root)")
if not _missing:
    config.available_features.add("mount-namespace")
# Feature "chromium": Debian's headless browser, which renders the link
# report in the report tests.
if shutil.which("chromium"):
    config.available_features.add("chromium")
else:
    _missing.append("chromium (chromium), for the link report tests")
config.substitutions.append(("%{env-missing}", "; ".join(_missing) or "nothing"))

# The errors of a failed job or distributor, as seen with the local fallback
# (on by default: the link compiles such jobs itself) turned off.
config.substitutions.append(("%{no-fallback}", "-mllvm -dtlto-local-fallback=false"))
config.substitutions.append(("%{coff-no-fallback}", "/mllvm:-dtlto-local-fallback=false"))

# The link report: its Python tool (check, summary, page, render).
config.substitutions.append(("%{report}", f"{_python} {os.path.join(_utils, 'report.py')}"))
