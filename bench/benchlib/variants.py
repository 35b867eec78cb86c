"""Link-time variants for the equivalence check: the same recorded link with
options that change code generation, linked in-process (the reference), with
our DTLTO through dtlto-backend, and through clang, and compared byte for
byte. The one place to add a variant.

Each variant only changes the link: ThinLTO's code generation happens there
(optimization level, relocation model, -mllvm options and the sample profile
are the linker's), so no program is rebuilt.
"""

import os
import subprocess

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Variant:
    key: str
    label: str
    # (recorded linker args, work dir for files the variant needs) -> args
    change: Callable[[list, str], list]


def _no_pie(args, work):
    return [a for a in args if a != "-pie"] + ["-no-pie"]


def _sample_profile(args, work):
    return args + ["--lto-sample-profile=" + os.path.join(work, "sample.prof")]


VARIANTS = [
    Variant("O3", "--lto-O3", lambda a, w: a + ["--lto-O3"]),
    Variant("no-pie", "position-dependent (-no-pie)", _no_pie),
    Variant("mllvm", "-mllvm -align-all-functions=6",
            lambda a, w: a + ["-mllvm", "-align-all-functions=6"]),
    Variant("sample-profile", "--lto-sample-profile (hot functions of the program)",
            _sample_profile),
]


def write_sample_profile(reference_binary, work):
    """A sample profile naming the program's largest functions as hot: enough
    for the profile to reach the backends (the programs carry no debug info,
    so only function-level counts can match)."""
    nm = subprocess.run(["llvm-nm-22", "--size-sort", "--defined-only",
                         reference_binary], capture_output=True, text=True).stdout
    # --size-sort prints "size type name", smallest first.
    funcs = [parts[2] for parts in map(str.split, nm.splitlines())
             if len(parts) == 3 and parts[1] in ("T", "t")
             and ".llvm." not in parts[2]][-20:]
    if not funcs:
        raise RuntimeError(f"no functions in {reference_binary} for a sample profile")
    with open(os.path.join(work, "sample.prof"), "w") as f:
        for i, name in enumerate(reversed(funcs)):
            count = 100000 // (i + 1)
            f.write(f"{name}:{count * 10}:{count}\n 1: {count}\n")
