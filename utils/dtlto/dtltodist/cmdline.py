"""Command lines as one string, for engines that take a string, not an argv.

SN-DBS build scripts and Incredibuild's /command= switch hold a command as
one Windows command line, which the program started splits back into
arguments by the Microsoft C runtime rules (CommandLineToArgvW). Build it
with windows_join() from the argv, never by pasting arguments together, so
spaces, quotes, backslashes and non-ASCII characters survive.
"""

import shlex

# Besides blanks and quotes, characters cmd.exe would act on outside quotes.
# Quoting them costs nothing when no cmd.exe is involved (the quotes are
# removed when the line is split) and protects them when one is.
_NEEDS_QUOTES = set(' \t\n\v"&|<>^()')


def windows_quote_arg(arg: str) -> str:
    """One argument (not the program) for a Windows command line."""
    if arg and not any(c in _NEEDS_QUOTES for c in arg):
        return arg
    out = ['"']
    backslashes = 0
    for c in arg:
        if c == "\\":
            backslashes += 1
            continue
        if c == '"':
            # Backslashes before a quote are escapes: double them, then
            # escape the quote itself.
            out.append("\\" * (2 * backslashes + 1) + '"')
        else:
            out.append("\\" * backslashes + c)
        backslashes = 0
    # Backslashes before the closing quote must not escape it.
    out.append("\\" * (2 * backslashes) + '"')
    return "".join(out)


def windows_quote_program(program: str) -> str:
    """The program (first word) of a Windows command line.

    It is split by simpler rules: up to the next quote when it starts with
    one, else up to the first blank; backslashes are never escapes. So it
    can be quoted but can hold no quote itself (nor can a Windows file name).
    """
    if not program or '"' in program:
        raise ValueError(f"program name {program!r} cannot be written into a "
                         "Windows command line")
    if any(c in _NEEDS_QUOTES for c in program):
        return f'"{program}"'
    return program


def windows_join(argv: list[str]) -> str:
    """argv as a Windows command line that splits back into exactly argv."""
    return " ".join([windows_quote_program(argv[0])] +
                    [windows_quote_arg(a) for a in argv[1:]])


def posix_join(argv: list[str]) -> str:
    """argv as a POSIX shell command line (for engines that run one on POSIX)."""
    return shlex.join(argv)
