#!/usr/bin/env python3
"""Writes deploy/seccomp-grove.json: a container engine's default seccomp profile plus io_uring.

The default profiles of Docker, podman and CRI-O allow a fixed list of system calls and block the
rest; io_uring_setup, io_uring_enter and io_uring_register are no longer on that list, so groved's
`io.backend: auto` falls back to pread/pwrite threads in a default container. This profile is the
default one with exactly those three calls allowed, nothing else changed.

The base is the default profile that Debian ships with its container tools
(/usr/share/containers/seccomp.json, package golang-github-containers-common, installed with
podman and buildah), the same JSON schema Docker, podman and Kubernetes read.

    scripts/make-seccomp-profile.py                 # regenerate deploy/seccomp-grove.json
    scripts/make-seccomp-profile.py --check         # exit 1 if the committed file differs
    scripts/make-seccomp-profile.py --base FILE --out FILE

Python 3 standard library only.
"""
import argparse
import json
import os
import sys

IO_URING = ["io_uring_enter", "io_uring_register", "io_uring_setup"]
DEFAULT_BASE = "/usr/share/containers/seccomp.json"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(ROOT, "deploy", "seccomp-grove.json")


def with_io_uring(base):
    profile = json.loads(json.dumps(base))  # deep copy
    rules = []
    for rule in profile.get("syscalls") or []:
        # A base that denies io_uring explicitly: take the three calls out of that rule.
        if rule.get("action") != "SCMP_ACT_ALLOW":
            names = [n for n in rule.get("names", []) if n not in IO_URING]
            if not names:
                continue
            rule["names"] = names
        rules.append(rule)
    rules.append({
        "names": IO_URING,
        "action": "SCMP_ACT_ALLOW",
        "args": [],
        "comment": "grove: io_uring for groved's uring IO backend (io.backend: auto or uring)",
        "includes": {},
        "excludes": {},
    })
    profile["syscalls"] = rules
    return profile


def render(profile):
    return json.dumps(profile, indent=2) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default=DEFAULT_BASE, help="default profile to start from")
    ap.add_argument("--out", default=DEFAULT_OUT, help="profile to write")
    ap.add_argument("--check", action="store_true", help="compare with --out instead of writing")
    args = ap.parse_args()
    with open(args.base) as f:
        text = render(with_io_uring(json.load(f)))
    if args.check:
        with open(args.out) as f:
            if f.read() != text:
                print(f"{os.path.relpath(args.out)} differs from the profile built from {args.base}; "
                      "run scripts/make-seccomp-profile.py", file=sys.stderr)
                return 1
        print(f"{os.path.relpath(args.out)}: up to date with {args.base}")
        return 0
    with open(args.out, "w") as f:
        f.write(text)
    print(f"wrote {os.path.relpath(args.out)} ({args.base} + {', '.join(IO_URING)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
