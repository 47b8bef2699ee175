"""The Python examples of README.md and client/python/README.md run as written (with the build
directory and the server's address put in) with the interpreter they name, build/venv/bin/python3:
Debian's python3 with the client, whatever `python3` on PATH is."""

import os
import re
import subprocess

import pytest

SOURCE = os.environ.get("GROVE_SOURCE_DIR", "")
BUILD = os.environ.get("GROVE_BUILD_DIR", "")


def example(readme, starts):
    """The ```sh block of ``readme`` whose first line starts with ``starts``."""
    with open(os.path.join(SOURCE, readme), encoding="utf-8") as f:
        text = f.read()
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        if block.startswith(starts):
            return block
    raise AssertionError(f"{readme}: no ```sh block starting with {starts!r}")


def run(block, address):
    script = block.replace("build/", BUILD.rstrip("/") + "/").replace("127.0.0.1:7400", address)
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)  # ctest's, for the other tests: the example must not need it
    return subprocess.run(["bash", "-euo", "pipefail", "-c", script], capture_output=True,
                          text=True, timeout=60, cwd=SOURCE, env=env)


@pytest.mark.skipif(not BUILD, reason="GROVE_BUILD_DIR not set (ctest sets it)")
def test_the_readme_example(shared_groved):
    r = run(example("README.md", "build/venv/bin/python3"), shared_groved.address)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "b'hello from python'\n"


@pytest.mark.skipif(not BUILD, reason="GROVE_BUILD_DIR not set (ctest sets it)")
def test_the_client_readme_example(shared_groved):
    r = run(example("client/python/README.md", "build/venv/bin/python3"),
            shared_groved.address)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "b'hello, grove'"
    assert lines[1] == "[b'ada lovelace', None]"
