#!/usr/bin/env python3
"""Prints the option grammar of programs as rows of programs.toml
(crates/core/src/policy/shell/programs.toml): the short and long specs read from
the program's own help on this machine, and where they were read from.

  tools/option_grammar.py gnu sort env sed      # GNU --help (getopt_long)
  tools/option_grammar.py gnu 'pip3 list'       # a subcommand's --help
  tools/option_grammar.py gnu 'curl --help all' # a help text asked for otherwise
  tools/option_grammar.py git commit branch     # git SUB -h (parse-options)

The output is reviewed before it goes into the table: a help text can omit an
option (the table then makes that option opaque, which is safe) but must never be
read as giving an option a value it does not take.
"""
import re
import subprocess
import sys


def run(argv):
    # outside a repository: there `git diff -h` lists its options, inside only its usage
    p = subprocess.run(argv, capture_output=True, text=True, cwd="/", env={"LC_ALL": "C", "PATH": "/usr/local/bin:/usr/bin:/bin"})
    return p.stdout + p.stderr


def version(prog):
    first = run([prog.split()[0], "--version"]).strip().splitlines()
    return first[0] if first else prog


def gnu(prog):
    """Options of a GNU --help text: lines whose first non-blank is '-'."""
    shorts, longs = {}, {}
    # a program whose full list needs more than --help names it (`curl --help all`)
    argv = prog.split() if "--help" in prog else prog.split() + ["--help"]
    for line in run(argv).splitlines():
        # wget aligns its columns with two blanks after the comma
        stripped = re.sub(r",\s+", ", ", line.strip())
        if not stripped.startswith("-"):
            continue
        head = re.split(r"\s{2,}", stripped)[0]
        tokens = [t.strip() for t in re.split(r",\s*", head) if t.strip().startswith("-")]
        # "Mandatory arguments to long options are mandatory for short options
        # too"; an optional one is optional only where its own token shows it
        required = False
        found = []
        for t in tokens:
            m = re.match(r"^(--?[A-Za-z0-9][\w-]*)(.*)$", t)
            if not m:
                continue
            name, rest = m.groups()
            takes = 0
            if rest.startswith("[=") or rest.startswith("[") or rest.startswith(" ["):
                takes = 1
            elif rest.startswith("=") or rest.startswith(" <") or (rest.startswith(" ") and len(name) == 2 and rest.strip()):
                takes = 2
                required = True
            found.append((name, takes))
        for name, takes in found:
            takes = 2 if required else takes
            if name.startswith("--"):
                longs[name[2:]] = max(longs.get(name[2:], 0), takes)
            elif len(name) == 2:
                shorts[name[1]] = max(shorts.get(name[1], 0), takes)
    return shorts, longs


def git(sub):
    """Options of git SUB -h (parse-options): '-x, --[no-]name <arg>' lines."""
    shorts, longs, negatable = {}, {}, {}
    for line in run(["git", sub, "-h"]).splitlines():
        m = re.match(r"^\s{4}(-[A-Za-z0-9])?(?:, )?(--(\[no-\])?([\w-]+))?(.*)$", line)
        if not m or not (m.group(1) or m.group(2)):
            continue
        short, _, no, name, arg = m.groups()
        arg = re.split(r"\s{2,}", arg)[0]
        # git writes a value as `<x>`, `(a|b)` or `[…]` (`[=<x>]` optional); a long name that fills
        # its column is followed by one blank and the description
        takes = 0
        if arg.startswith("["):
            takes = 1
        elif arg.startswith(" ") and (arg.lstrip()[:1] in ("<", "(", "[") or arg.lstrip().startswith("...")):
            takes = 2
        if short:
            shorts[short[1]] = takes
        if name:
            longs[name] = takes
            negatable[name] = bool(no)
    return shorts, longs, negatable


def spec(shorts, longs, negatable=None):
    s = "".join(c + ["", "::", ":"][t] for c, t in sorted(shorts.items()))
    ls = []
    for n, t in sorted(longs.items()):
        bang = "!" if negatable is not None and not negatable.get(n) and not n.startswith("no-") else ""
        ls.append(bang + n + ["", "::", ":"][t])
    return s, ls


def main():
    kind, progs = sys.argv[1], sys.argv[2:]
    for prog in progs:
        if kind == "gnu":
            s, ls = spec(*gnu(prog))
            shown = prog if "--help" in prog else f"{prog} --help"
            src = f"{version(prog)}, {shown} (Debian 12)"
            print(f"# {prog}\nparser = \"getopt\"\nsource = \"{src}\"\nshort = \"{s}\"\nlong = {ls!r}\n".replace("'", '"'))
        else:
            s, ls = spec(*git(prog))
            src = f"{run(['git', '--version']).strip()}, git {prog} -h"
            print(f"# git {prog}\nparser = \"git\"\nsource = \"{src}\"\nshort = \"{s}\"\nlong = {ls!r}\n".replace("'", '"'))


if __name__ == "__main__":
    main()
