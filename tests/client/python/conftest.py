"""Fixtures for the Python client's tests: a real groved on free loopback ports.

GROVED names the groved binary and GROVE_SOURCE_DIR the source tree (ctest sets both); the
client package and its generated stubs come from PYTHONPATH.
"""

import os
import signal
import socket
import subprocess
import tempfile
import time
from concurrent import futures

import grpc

import pytest

import grove_client
from grove.v1 import kv_pb2, kv_pb2_grpc


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Groved:
    """One groved process over a data directory that outlives restarts."""

    def __init__(self, work, extra_yaml=""):
        self.work = work
        self.address = f"127.0.0.1:{free_port()}"
        self.metrics = f"127.0.0.1:{free_port()}"
        self.config = os.path.join(work, "grove.yaml")
        with open(self.config, "w") as f:
            f.write(f"data_dir: {os.path.join(work, 'data')}\n"
                    "cache_bytes: 16MiB\n"
                    f"server:\n  listen: {self.address}\n  metrics_listen: {self.metrics}\n"
                    "  drain_seconds: 1\n" + extra_yaml)
        self.log_path = os.path.join(work, "groved.log")
        self.proc = None

    def start(self, client_kwargs=None):
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([os.environ["GROVED"], "--config", self.config],
                                     stdout=log, stderr=subprocess.STDOUT)
        log.close()
        self.wait_ready(client_kwargs or {})

    def wait_ready(self, client_kwargs):
        deadline = time.monotonic() + 60
        with grove_client.Client(self.address, timeout=2, **client_kwargs) as c:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"groved exited with {self.proc.returncode}:\n{self.log()}")
                try:
                    if c.health() == "SERVING":
                        return
                except grove_client.GroveError:
                    pass
                time.sleep(0.05)
        raise RuntimeError(f"groved did not become ready:\n{self.log()}")

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()[-4000:]


@pytest.fixture
def work_dir():
    with tempfile.TemporaryDirectory(prefix="grove-py-") as d:
        yield d


@pytest.fixture
def make_groved(work_dir):
    """make_groved(extra_yaml="", **client_kwargs) starts a groved; all are stopped at the end."""
    started = []

    def make(extra_yaml="", sub="g", **client_kwargs):
        d = os.path.join(work_dir, sub)
        os.makedirs(d, exist_ok=True)
        g = Groved(d, extra_yaml)
        started.append(g)
        g.start(client_kwargs)
        return g

    yield make
    for g in started:
        g.stop()


@pytest.fixture(scope="module")
def shared_groved():
    with tempfile.TemporaryDirectory(prefix="grove-py-") as d:
        g = Groved(d)
        g.start()
        yield g
        g.stop()


@pytest.fixture
def client(shared_groved):
    with grove_client.Client(shared_groved.address) as c:
        yield c


class Scripted(kv_pb2_grpc.KVServicer):
    """A KV server that fails the first `failures` calls of each method with UNAVAILABLE, marked
    not applied or not: for the write-retry rule of both clients."""

    def __init__(self, failures, not_applied):
        self.failures = failures
        self.not_applied = not_applied
        self.calls = {}

    def _maybe_fail(self, name, context):
        n = self.calls[name] = self.calls.get(name, 0) + 1
        if n <= self.failures:
            if self.not_applied:
                context.set_trailing_metadata((("grove-not-applied", "1"),))
            context.abort(grpc.StatusCode.UNAVAILABLE, "draining")

    def Put(self, request, context):
        self._maybe_fail("Put", context)
        return kv_pb2.PutResponse(version=7)

    def Get(self, request, context):
        self._maybe_fail("Get", context)
        return kv_pb2.GetResponse(found=True, value=b"v")


@pytest.fixture
def scripted():
    """scripted(servicer) serves it on a free loopback port and returns the address."""
    servers = []

    def start(servicer):
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        kv_pb2_grpc.add_KVServicer_to_server(servicer, server)
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        servers.append(server)
        return f"127.0.0.1:{port}"

    yield start
    for s in servers:
        s.stop(None)
