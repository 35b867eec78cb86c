"""Credential headers for real services, kept out of every message.

--credentials-file FILE holds "name: value" lines (blank lines and "#"
comments allowed), e.g. "x-buildbuddy-api-key: ..." or
"authorization: Bearer ...". --credentials-env NAME=VAR sends header NAME
with the value of environment variable VAR. Values are only ever handed to
gRPC as call metadata: errors name the file, the line or the variable,
never the value, and nothing is written anywhere.
"""

import os
import re

from dtltodist import paths

_NAME = re.compile(r"[a-z0-9][a-z0-9._-]*")
# Names gRPC or REAPI use themselves.
_RESERVED = ("grpc-", "build.bazel.remote.execution.v2.")


class CredentialsError(Exception):
    """str() is one line and never contains a secret."""


def _header(name: str, value: str, where: str) -> tuple[str, str]:
    name = name.strip().lower()
    if not _NAME.fullmatch(name) or name.endswith("-bin") or name.startswith(_RESERVED):
        # Not echoed: a line typed wrong may hold the secret in the name part.
        raise CredentialsError(f"{where}: not a usable header name (letters, digits, "
                               "'-', '_' and '.'; not grpc-*, not *-bin)")
    value = value.strip()
    if not value or any(not 0x20 <= ord(c) < 0x7F for c in value):
        raise CredentialsError(f"{where}: the header's value is empty or not printable ASCII")
    return name, value


def from_file(path: str) -> tuple[list[tuple[str, str]], bool]:
    """(headers, whether other users can read the file)."""
    try:
        with paths.open_input(path) as f:
            mode = os.fstat(f.fileno()).st_mode
            raw = f.read(1 << 20)
    except OSError as e:
        raise CredentialsError(f"--credentials-file {path}: {e.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise CredentialsError(f"--credentials-file {path}: not UTF-8") from None
    headers = []
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, value = line.partition(":")
        if not sep:
            raise CredentialsError(f'{path}:{n}: expected "name: value"')
        headers.append(_header(name, value, f"{path}:{n}"))
    if not headers:
        raise CredentialsError(f"--credentials-file {path}: no header in it")
    return headers, bool(mode & 0o077)


def from_env(spec: str, environ=os.environ) -> tuple[str, str]:
    name, sep, var = spec.partition("=")
    if not sep or not var:
        raise CredentialsError(f'--credentials-env "{spec}": expected HEADER=VARIABLE')
    value = environ.get(var, "")
    if not value:
        raise CredentialsError(f"--credentials-env {name}={var}: ${var} is not set or empty")
    return _header(name, value, f"--credentials-env {name}={var}")
