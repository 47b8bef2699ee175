#!/usr/bin/python3
"""`make check-tsa`: clang-14's thread-safety analysis over every source of server/ and client/,
with -Werror=thread-safety.

    scripts/check_tsa.py [--build DIR] [--jobs N] [--clang clang++-14] [FILE...]

Reads DIR/compile_commands.json (a configured and built tree: the generated protobuf headers
must exist) and runs clang with each file's own flags, -fsyntax-only (the analysis runs in
semantic analysis; no code is generated) and every other warning off, so that only lock
contracts can fail it: a GROVE_GUARDED_BY member touched without its mutex, a GROVE_REQUIRES
function called without it, a GROVE_EXCLUDES one called with it, a lock not released on some
path. FILE... limits the run to those sources. Exits 1 with clang's messages when any fails.
"""

import argparse
import concurrent.futures
import json
import os
import shlex
import subprocess
import sys

# The analysis and nothing else (clang reads later flags over earlier ones).
FLAGS = ["-fsyntax-only", "-ferror-limit=0", "-Wno-everything", "-Wthread-safety", "-Werror=thread-safety"]
# gcc options clang does not know, and output options -fsyntax-only has no use for.
DROP = {"-fno-semantic-interposition", "-fconcepts-diagnostics-depth", "-MD", "-MMD", "-c"}
DROP_WITH_VALUE = {"-o", "-MT", "-MF", "-MQ"}


def clang_command(entry, clang):
    args = entry.get("arguments") or shlex.split(entry["command"])
    # The compiler, possibly behind a launcher (ccache): everything up to the first option.
    i = 0
    while i < len(args) and not args[i].startswith("-"):
        i += 1
    out = [clang]
    rest = args[i:]
    skip = False
    for a in rest:
        if skip:
            skip = False
            continue
        if a in DROP_WITH_VALUE:
            skip = True
            continue
        if a in DROP or a == entry["file"] or a.startswith("-fconcepts-diagnostics-depth"):
            continue
        out.append(a)
    return out + FLAGS + [entry["file"]]


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(root, "build"))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--clang", default="clang++-14")
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()
    db = os.path.join(args.build, "compile_commands.json")
    if not os.path.exists(db):
        sys.exit(f"check-tsa: {db} not found: configure and build that tree first (make build)")
    with open(db, encoding="utf-8") as f:
        entries = json.load(f)
    dirs = tuple(os.path.join(root, d) + os.sep for d in ("server", "client"))
    wanted = {os.path.abspath(f) for f in args.files}
    entries = [e for e in entries
               if os.path.abspath(os.path.join(e["directory"], e["file"])).startswith(dirs)
               and (not wanted or os.path.abspath(e["file"]) in wanted)]
    if not entries:
        sys.exit("check-tsa: no server/ or client/ source in " + db)

    def check(entry):
        r = subprocess.run(clang_command(entry, args.clang), cwd=entry["directory"],
                           capture_output=True, text=True)
        return entry["file"], r.returncode, r.stderr

    failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for path, rc, err in pool.map(check, entries):
            if rc != 0:
                failed += 1
                sys.stderr.write(err)
    print(f"check-tsa: {len(entries)} files, {failed} with thread-safety errors")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
