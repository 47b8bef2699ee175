"""The Batch stream behind grove_client.Client (docs/server.md, "Many calls on one stream").

The calls of every thread share one grove.v1.KV/Batch stream, as in the C++ client's Batcher
(client/lib/batcher.h): at most one request message is in flight; a call that finds the stream
idle goes out at once in a message of its own, and calls that arrive meanwhile go together as the
next message as soon as the last answer of the one in flight is back. A reader thread completes
calls by tag. When the stream ends, the calls it had sent fail as of unknown outcome (unless the
server marked them not applied, as its drain does) and those it had not sent as not applied; the
next call opens a new stream.
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
from typing import Any, Dict, Iterator, List, Optional

import grpc

from grove.v1 import kv_pb2

from ._common import NOT_APPLIED_METADATA, Metadata

# Codes with which the server refuses a stream (or one of its messages) having applied nothing
# of it; any other end may cut a message short.
_REFUSED = {grpc.StatusCode.UNIMPLEMENTED, grpc.StatusCode.UNAUTHENTICATED,
            grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.INVALID_ARGUMENT,
            grpc.StatusCode.RESOURCE_EXHAUSTED}


class StreamFailure(Exception):
    """The stream could not deliver a call's answer: ``code`` and ``message`` as a gRPC status,
    ``not_applied`` when the server cannot have applied the call."""

    def __init__(self, code: grpc.StatusCode, message: str, not_applied: bool):
        super().__init__(message)
        self.code = code
        self.message = message
        self.not_applied = not_applied


class _Pending:
    __slots__ = ("request", "event", "result", "error", "sent", "size")

    def __init__(self, request: kv_pb2.SubRequest):
        self.request = request
        self.event = threading.Event()
        self.result: Optional[kv_pb2.SubResult] = None
        self.error: Optional[StreamFailure] = None
        self.sent = False
        self.size = request.ByteSize()


class _Conn:
    """One opening of the stream: grpcio's thread sends what is put into ``outbox``."""

    def __init__(self, stub: Any, metadata: Metadata):
        self.outbox: queue.SimpleQueue[Optional[kv_pb2.BatchRequest]] = queue.SimpleQueue()
        self.ended = False
        self.responses = stub.Batch(self._requests(), metadata=metadata)

    def _requests(self) -> Iterator[kv_pb2.BatchRequest]:
        while True:
            message = self.outbox.get()
            if message is None:
                return
            yield message


class Batcher:
    """Thread-safe; ``metadata`` is sent when a stream opens (the bearer token)."""

    def __init__(self, stub: Any, metadata: Metadata, *, max_calls: int = 256,
                 max_bytes: int = 1 << 20):
        self._stub = stub
        self._metadata = metadata
        self._max_calls = max_calls
        self._max_bytes = max_bytes
        self._lock = threading.Lock()
        self._queue: List[_Pending] = []   # calls not sent yet, in arrival order
        self._sent: Dict[int, _Pending] = {}    # tag -> call, until answered or given up
        self._in_flight = False
        self._expected = 0  # answers still due for the message in flight
        self._tags = itertools.count(1)
        self._conn: Optional[_Conn] = None
        self._readers: List[threading.Thread] = []
        self._closed = False

    def call(self, sub: kv_pb2.SubRequest, deadline: float) -> kv_pb2.SubResult:
        """Sends ``sub`` (a kv_pb2.SubRequest; its tag and timeout are set here) and returns its
        kv_pb2.SubResult, or raises StreamFailure. ``deadline`` is a time.monotonic() value."""
        with self._lock:
            if self._closed:
                raise StreamFailure(grpc.StatusCode.UNAVAILABLE, "the client is closed", True)
            sub.tag = next(self._tags)
            sub.timeout_ms = max(1, int((deadline - time.monotonic()) * 1000))
            p = _Pending(sub)
            self._queue.append(p)
            self._send_locked()
        if not p.event.wait(max(0.0, deadline - time.monotonic())):
            with self._lock:
                if not p.event.is_set():
                    if not p.sent:
                        self._queue.remove(p)
                    else:
                        self._sent.pop(sub.tag, None)
                    raise StreamFailure(grpc.StatusCode.DEADLINE_EXCEEDED,
                                        "deadline exceeded waiting for the Batch stream's answer",
                                        not p.sent)
        if p.error is not None:
            raise p.error
        assert p.result is not None
        return p.result

    def close(self) -> None:
        with self._lock:
            self._closed = True
            conn = self._conn
            readers = list(self._readers)
        if conn is not None:
            conn.outbox.put(None)
            conn.responses.cancel()
        for r in readers:
            r.join(timeout=5)

    def _send_locked(self) -> None:
        if self._in_flight or not self._queue or self._closed:
            return
        if self._conn is None or self._conn.ended:
            self._readers = [r for r in self._readers if r.is_alive()]
            self._conn = _Conn(self._stub, self._metadata)
            reader = threading.Thread(target=self._read, args=(self._conn,), daemon=True,
                                      name="grove-batch-reader")
            self._readers.append(reader)
            reader.start()
        message = kv_pb2.BatchRequest()
        size = 0
        while self._queue and len(message.requests) < self._max_calls:
            p = self._queue[0]
            if message.requests and size + p.size > self._max_bytes:
                break
            self._queue.pop(0)
            size += p.size
            p.sent = True
            self._sent[p.request.tag] = p
            message.requests.append(p.request)
        self._in_flight = True
        self._expected = len(message.requests)
        self._conn.outbox.put(message)

    def _read(self, conn: _Conn) -> None:
        try:
            for response in conn.responses:
                with self._lock:
                    for r in response.results:
                        if self._expected > 0:
                            self._expected -= 1
                        p = self._sent.pop(r.tag, None)
                        if p is not None:  # None: given up at its deadline
                            p.result = r
                            p.event.set()
                    if self._expected == 0 and self._in_flight:
                        self._in_flight = False
                        self._send_locked()
            code, details = grpc.StatusCode.OK, "the stream ended"
            trailers = conn.responses.trailing_metadata()
        except grpc.RpcError as e:
            code, details, trailers = e.code(), e.details() or "", e.trailing_metadata()
        not_applied = any(k == NOT_APPLIED_METADATA for k, _ in (trailers or ()))
        with self._lock:
            conn.ended = True
            conn.outbox.put(None)
            why = f"the Batch stream ended ({details})"
            for p in self._sent.values():
                if code in _REFUSED:
                    p.error = StreamFailure(code, details, True)
                elif not_applied:
                    p.error = StreamFailure(grpc.StatusCode.UNAVAILABLE,
                                            why + "; the server did not apply the call", True)
                else:
                    p.error = StreamFailure(
                        grpc.StatusCode.UNAVAILABLE,
                        why + "; the call was sent and may or may not have been applied", False)
                p.event.set()
            self._sent.clear()
            for p in self._queue:
                p.error = StreamFailure(code if code in _REFUSED else grpc.StatusCode.UNAVAILABLE,
                                        details if code in _REFUSED
                                        else why + "; the call was not sent", True)
                p.event.set()
            self._queue.clear()
            self._in_flight = False
            self._expected = 0
