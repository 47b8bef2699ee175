#!/usr/bin/env bash
# `pip install client/python` as a user would, into a fresh environment on Debian's python3 that
# sees Debian's grpcio (no network: --no-build-isolation uses python3-setuptools): the package
# builds its stubs from proto/, installs, and imports from outside the source tree.
set -euo pipefail
src=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A copy, so the build's files (client/python/build/) stay out of the source tree; the protos
# are found through GROVE_PROTO_DIR as a copy has no ../../proto.
cp -r "$src/client/python" "$work/client"
rm -rf "$work/client/build"
/usr/bin/python3 -m venv --system-site-packages "$work/env"
GROVE_PROTO_DIR=$src/proto "$work/env/bin/pip" install --quiet --no-build-isolation \
  --disable-pip-version-check "$work/client"
cd "$work"
"$work/env/bin/python" - <<'PY'
import grove_client, grove_client.aio, grove_client._cluster
from grove.v1 import cluster_pb2, kv_pb2
from grove_health import health_pb2
import importlib.metadata as md
import pathlib
assert md.version("grove-client") == "0.1.0"
pkg = pathlib.Path(grove_client.__file__).parent
assert (pkg / "py.typed").is_file(), "the package says it is typed"
assert "site-packages" in str(pkg), pkg
assert pathlib.Path(kv_pb2.__file__).with_suffix(".pyi").is_file(), "message stubs installed"
r = kv_pb2.PutRequest(key=b"k", value=b"v")
assert kv_pb2.PutRequest.FromString(r.SerializeToString()).key == b"k"
try:
    grove_client.Client("127.0.0.1:1", timeout=0)
except grove_client.InvalidArgument as e:
    assert e.field == "timeout", e.message
else:
    raise AssertionError("timeout=0 was accepted")
print("installed:", pkg)
PY
