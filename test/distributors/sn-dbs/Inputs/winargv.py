"""Split a Windows command line the way the Microsoft C runtime does.

Written for the tests, apart from dtltodist.cmdline (which builds such
lines), so that a quoting mistake there cannot hide behind the same
mistake here. Rules (CommandLineToArgvW, MSVC runtime since 2008):
  - the program name ends at the next quote if it starts with one, else at
    the first blank; backslashes in it are plain characters;
  - after it, blanks outside quotes separate arguments; a quote toggles
    quoting; "" inside quotes is a literal quote;
  - 2n backslashes before a quote give n backslashes (the quote then
    toggles), 2n+1 give n backslashes and a literal quote; backslashes not
    before a quote are plain characters.

  winargv.py LINE   prints the arguments one per line, each as a JSON string
"""

import json
import sys

BLANKS = " \t"


def split(line: str) -> list[str]:
    i, n = 0, len(line)
    while i < n and line[i] in BLANKS:
        i += 1
    if i < n and line[i] == '"':
        end = line.find('"', i + 1)
        end = n if end < 0 else end
        args = [line[i + 1:end]]
        i = end + 1
    else:
        start = i
        while i < n and line[i] not in BLANKS:
            i += 1
        args = [line[start:i]]
    while True:
        while i < n and line[i] in BLANKS:
            i += 1
        if i >= n:
            return args
        word, quoted = [], False
        while i < n:
            c = line[i]
            if c == "\\":
                j = i
                while j < n and line[j] == "\\":
                    j += 1
                count = j - i
                if j < n and line[j] == '"':
                    word.append("\\" * (count // 2))
                    if count % 2:
                        word.append('"')
                        j += 1
                else:
                    word.append("\\" * count)
                i = j
            elif c == '"':
                if quoted and i + 1 < n and line[i + 1] == '"':
                    word.append('"')
                    i += 2
                else:
                    quoted = not quoted
                    i += 1
            elif c in BLANKS and not quoted:
                break
            else:
                word.append(c)
                i += 1
        args.append("".join(word))


if __name__ == "__main__":
    for arg in split(sys.argv[1]):
        print(json.dumps(arg, ensure_ascii=False))
