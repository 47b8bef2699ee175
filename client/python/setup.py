"""Builds the grove-client package (pyproject.toml holds its metadata).

The gRPC stubs are generated here, when the package is built, from the repository's proto/
directory (or $GROVE_PROTO_DIR) with protoc and Debian's grpc_python_plugin (packages
protobuf-compiler and protobuf-compiler-grpc; $PROTOC and $GRPC_PYTHON_PLUGIN name others),
into build/proto/, the same layout CMake assembles in build/client/python/:

    grove/v1/{kv,admin,cluster}_pb2.py(i), *_pb2_grpc.py   from proto/grove/v1/*.proto
    grove_health/health_pb2.py(i), health_pb2_grpc.py     from proto/grpc/health/v1/health.proto

(the health stubs under grove_health/: a directory named grpc/ would hide the real grpc package).
"""

import os
import pathlib
import shutil
import subprocess
import sys

from setuptools import setup

HERE = pathlib.Path(__file__).resolve().parent
PROTO = pathlib.Path(os.environ.get("GROVE_PROTO_DIR", HERE.parent.parent / "proto"))
OUT = HERE / "build" / "proto"


def tool(env, name):
    path = os.environ.get(env) or shutil.which(name)
    if not path:
        sys.exit(f"grove-client: {name} not found (Debian: apt-get install protobuf-compiler "
                 f"protobuf-compiler-grpc), or name it with ${env}")
    return path


def generate():
    if not (PROTO / "grove" / "v1" / "kv.proto").is_file():
        sys.exit(f"grove-client: no grove/v1/kv.proto under {PROTO}: build from the repository "
                 "(pip install client/python) or set $GROVE_PROTO_DIR")
    protoc = tool("PROTOC", "protoc")
    plugin = tool("GRPC_PYTHON_PLUGIN", "grpc_python_plugin")
    shutil.rmtree(OUT, ignore_errors=True)
    health_src = OUT / "proto-src" / "grove_health"
    health_src.mkdir(parents=True)
    shutil.copy(PROTO / "grpc" / "health" / "v1" / "health.proto", health_src / "health.proto")
    common = [protoc, f"--python_out={OUT}", f"--pyi_out={OUT}", f"--grpc_out={OUT}",
              f"--plugin=protoc-gen-grpc={plugin}"]
    subprocess.run(common + [f"--proto_path={PROTO}", "grove/v1/kv.proto", "grove/v1/admin.proto",
                             "grove/v1/cluster.proto"], check=True)
    subprocess.run(common + [f"--proto_path={OUT / 'proto-src'}", "grove_health/health.proto"],
                   check=True)
    shutil.rmtree(OUT / "proto-src")


generate()
rel = os.path.relpath(OUT, HERE)
setup(
    packages=["grove_client", "grove", "grove.v1", "grove_health"],
    package_dir={"grove": f"{rel}/grove", "grove_health": f"{rel}/grove_health"},
    package_data={"grove_client": ["py.typed"], "grove.v1": ["*.pyi"], "grove_health": ["*.pyi"]},
)
