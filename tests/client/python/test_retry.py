"""The write-retry rule against a scripted server: a write is retried only when the server says
it was not applied; reads are retried on UNAVAILABLE."""

from concurrent import futures

import grpc
import pytest

import grove_client
from grove.v1 import kv_pb2, kv_pb2_grpc


class Scripted(kv_pb2_grpc.KVServicer):
    """Fails the first `failures` calls of each method with UNAVAILABLE."""

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
        return kv_pb2.PutResponse()

    def Get(self, request, context):
        self._maybe_fail("Get", context)
        return kv_pb2.GetResponse(found=True, value=b"v")


@pytest.fixture
def serve():
    servers = []

    def start(servicer):
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        kv_pb2_grpc.add_KVServicer_to_server(servicer, server)
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        servers.append(server)
        return grove_client.Client(f"127.0.0.1:{port}", initial_backoff=0.01, max_backoff=0.05)

    yield start
    for s in servers:
        s.stop(None)


def test_a_write_refused_unapplied_is_retried(serve):
    s = Scripted(failures=2, not_applied=True)
    serve(s).put(b"k", b"v")
    assert s.calls["Put"] == 3


def test_a_write_that_may_have_been_applied_is_not_retried(serve):
    s = Scripted(failures=1, not_applied=False)
    with pytest.raises(grove_client.OutcomeUnknown) as e:
        serve(s).put(b"k", b"v")
    assert s.calls["Put"] == 1
    assert "may or may not have been applied" in e.value.message


def test_reads_are_retried_until_attempts_run_out(serve):
    s = Scripted(failures=2, not_applied=False)
    assert serve(s).get(b"k") == b"v"
    assert s.calls["Get"] == 3
    s = Scripted(failures=10, not_applied=False)
    with pytest.raises(grove_client.Unavailable):
        serve(s).get(b"k")
    assert s.calls["Get"] == 5, "max_attempts defaults to 5"
