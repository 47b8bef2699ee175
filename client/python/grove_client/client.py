"""grove_client.Client: a small client for groved's grove.v1.KV API.

The same rules as the C++ client (client/include/grove/client/client.h):

* Every attempt has a deadline (``timeout`` seconds).
* Reads (get, batch_get, scan, stats) are retried on UNAVAILABLE with exponential backoff and
  jitter, up to ``max_attempts`` attempts.
* Writes (put, delete, batch_insert) are sent only over a ready connection (an attempt without
  one is not sent, which is always safe to retry), and are retried on UNAVAILABLE only when the
  server says it refused them before applying anything (trailing metadata ``grove-not-applied``).
  A write whose connection broke after it was sent raises :class:`OutcomeUnknown`.
* ``scan`` is an iterator that pages through the range and, after a broken stream, resumes right
  after the last key it yielded: every key is yielded once, in order.
* With ``transport="stream"`` (the default) get, batch_get, put, delete, batch_insert and
  delete_range of every thread travel on one grove.v1.KV/Batch stream (grove_client._stream), with
  the same answers, exceptions and retry rules as unary calls; a server without Batch gets unary
  calls. ``transport="unary"`` sends one RPC per call.
* An address ``etcd://HOST:PORT[,HOST:PORT...][/CLUSTER]`` routes every call to the node that
  owns its keys by the cluster's shard map (grove_client._cluster; docs/cluster.md, "Routing").
"""

from __future__ import annotations

import time
from typing import Any, Iterable, Iterator, List, Optional, Tuple

import grpc

from grove.v1 import admin_pb2, admin_pb2_grpc, kv_pb2, kv_pb2_grpc
from grove_health import health_pb2, health_pb2_grpc

from . import _cluster, _common, _stream, errors
from ._common import Bytes, DeleteRangeResult, Mutation, ValueInfo

_SCAN_STOPPED_AT = "grove-scan-stopped-at-bin"

# grpc.StatusCode by its number.
_CODES = {c.value[0]: c for c in grpc.StatusCode}


class _SubError(Exception):
    """A sub-request's error status: the exception to raise, its code, and whether the server
    marked it not applied."""

    def __init__(self, error: errors.GroveError, code: grpc.StatusCode, not_applied: bool):
        super().__init__(error.message)
        self.error = error
        self.code = code
        self.not_applied = not_applied


class Client:
    """A connection to one groved. Safe to share between threads; close() when done.

    Args:
        address: "host:port" of groved's gRPC listener.
        token: bearer token sent with every call (groved's ``auth.tokens_file``); None sends none.
        tls: connect with TLS. ``ca_file`` is the CA that signed the server's certificate
            (None: the system's roots); ``cert_file`` and ``key_file`` are the client's
            certificate for servers that require mutual TLS; ``server_name`` is the name expected
            in the server's certificate when it is not the address's host.
        timeout: deadline of each attempt, in seconds.
        max_attempts: attempts on UNAVAILABLE, the first included.
        initial_backoff, max_backoff: the retry delay in seconds, doubling from the first to the
            second, with half of it random so that many clients do not retry in lockstep.
        connect_timeout: how long a write waits for a ready connection (at most ``timeout``)
            before that attempt is given up unsent.
        transport: "stream" (calls of all threads multiplexed onto one Batch stream) or
            "unary" (one RPC per call).
        etcd_ca_file, etcd_cert_file, etcd_key_file: TLS to etcd for an etcd:// address (the CA
            turns it on; the certificate and key together for etcd's --client-cert-auth). The
            node options above apply to every node.

    With an etcd:// address, stats, health and backup are per node (FailedPrecondition);
    node_stats() gives every owner's Stats.
    """

    def __init__(self, address: str = "127.0.0.1:7400", *, token: Optional[str] = None,
                 tls: bool = False, ca_file: Optional[str] = None,
                 cert_file: Optional[str] = None, key_file: Optional[str] = None,
                 server_name: Optional[str] = None, timeout: float = 10.0,
                 max_attempts: int = 5, initial_backoff: float = 0.05,
                 max_backoff: float = 2.0, connect_timeout: float = 1.0,
                 transport: str = "stream", etcd_ca_file: Optional[str] = None,
                 etcd_cert_file: Optional[str] = None, etcd_key_file: Optional[str] = None):
        if transport not in ("stream", "unary"):
            raise errors.InvalidArgument(
                f"transport: must be \"stream\" or \"unary\", got {transport!r}")
        self._s = _common.Settings.make(address, token, timeout, max_attempts, initial_backoff,
                                        max_backoff, connect_timeout)
        self.address = address
        # The shard map version a routing client's calls carry (grove-map-version); 0: none.
        self._map_version = 0
        self._router: Optional[_cluster.Router] = None
        self._batcher: Optional[_stream.Batcher] = None
        spec = _common.channel_spec(tls, ca_file, cert_file, key_file, server_name)
        if address.startswith(_cluster.SCHEME):
            def node(node_address: str) -> Client:
                # Unary: each call carries the map version it was routed by (a stream's metadata
                # is fixed when it opens).
                return Client(node_address, token=token, tls=tls, ca_file=ca_file,
                              cert_file=cert_file, key_file=key_file, server_name=server_name,
                              timeout=timeout, max_attempts=max_attempts,
                              initial_backoff=initial_backoff, max_backoff=max_backoff,
                              connect_timeout=connect_timeout, transport="unary")
            self._router = _cluster.Router(address, node, self._s.timeout, etcd_ca_file,
                                           etcd_cert_file, etcd_key_file)
            return
        if etcd_ca_file or etcd_cert_file or etcd_key_file:
            raise errors.InvalidArgument("etcd TLS options: only for an etcd:// address")
        if spec.credentials is not None:
            self._channel = grpc.secure_channel(address, spec.credentials, options=spec.options)
        else:
            self._channel = grpc.insecure_channel(address, options=spec.options)
        self._kv = kv_pb2_grpc.KVStub(self._channel)
        self._admin = admin_pb2_grpc.AdminStub(self._channel)
        self._health = health_pb2_grpc.HealthStub(self._channel)
        if transport == "stream":
            self._batcher = _stream.Batcher(self._kv, self._s.metadata())
        self._no_stream = False  # the server answered Batch with UNIMPLEMENTED

    def close(self) -> None:
        """Closes the connection; calls in flight fail with CANCELLED."""
        if self._router is not None:
            self._router.close()
            return
        # grpcio's connectivity poller (started by a write's wait for a ready connection) runs
        # until a 0.2 s tick after its last subscriber left; a channel closed under it makes that
        # thread die with "Channel closed!". Let it end first.
        state = getattr(self._channel, "_connectivity_state", None)
        deadline = time.monotonic() + 1.0
        while state is not None and getattr(state, "polling", False) and \
                time.monotonic() < deadline:
            time.sleep(0.01)
        if self._batcher is not None:
            self._batcher.close()
        self._channel.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # Reads.

    def get(self, key: Bytes) -> Optional[bytes]:
        """The value of ``key`` (bytes), or None when the key is absent."""
        return self.get_info(key).value

    def get_versioned(self, key: Bytes) -> Tuple[Optional[bytes], int]:
        """(value, version) of ``key``, or (None, 0) when absent. The version rises with every
        write of the key; pass it to put(..., if_version=) for a compare-and-swap."""
        info = self.get_info(key)
        return info.value, info.version

    def get_info(self, key: Bytes) -> ValueInfo:
        """A ValueInfo (value, version, expires_at_ms) of ``key``; value None when absent."""
        if self._router is not None:
            return self._router.for_key(_common.to_bytes("key", key), lambda c: c.get_info(key))
        resp = self._call(self._kv.Get, _common.get_request(key), kind="get")
        return _common.value_info(resp)

    def batch_get(self, keys: Iterable[Bytes]) -> List[Optional[bytes]]:
        """A list answering ``keys`` in order: each value, or None for an absent key."""
        if self._router is not None:
            return self._router.batch_get(list(_common.batch_get_request(keys).keys))
        resp = self._call(self._kv.BatchGet, _common.batch_get_request(keys), kind="batch_get")
        return _common.batch_get_values(resp)

    def scan(self, start: Bytes = b"", end: Bytes = b"", *, limit: int = 0,
             reverse: bool = False, keys_only: bool = False,
             page_size: int = 10000) -> Iterator[Tuple[bytes, bytes]]:
        """Yields (key, value) pairs of [start, end) in key order, or reversed.

        ``end`` empty means to the last key; ``limit`` 0 means every key in the range. With
        ``keys_only`` the values are empty (large values are not read). The iterator asks for
        ``page_size`` entries per request (at most the server's limits.max_scan_limit) and resumes
        after a broken stream; closing it early cancels the stream.
        """
        req = _common.scan_request(start, end, limit, page_size, reverse, keys_only)
        if self._router is not None:
            return self._router.scan(req, limit, page_size)
        return self._scan(req, limit, page_size)

    def stats(self) -> kv_pb2.StatsResponse:
        """The server's figures: a grove.v1.StatsResponse message.

        ``google.protobuf.json_format.MessageToDict(client.stats())`` turns it into a dict.
        """
        if self._router is not None:
            raise _cluster.per_node("stats")
        resp: kv_pb2.StatsResponse = self._call(self._kv.Stats, kv_pb2.StatsRequest())
        return resp

    def health(self, service: str = "") -> str:
        """The serving status of ``service`` ("" = the whole server), e.g. "SERVING".

        Not retried: a health probe reports what it sees now.
        """
        if self._router is not None:
            raise _cluster.per_node("health")
        req = health_pb2.HealthCheckRequest(service=service)
        try:
            resp = self._health.Check(req, timeout=self._s.timeout, metadata=self._metadata())
        except grpc.RpcError as e:
            raise errors.from_rpc_error(e) from None
        return str(health_pb2.HealthCheckResponse.ServingStatus.Name(resp.status))

    # Writes: idempotent, durable once they return.

    def put(self, key: Bytes, value: Bytes, *, if_absent: bool = False,
            if_value: Optional[Bytes] = None, if_version: Optional[int] = None,
            ttl: Optional[float] = None, return_current: bool = False) -> int:
        """Sets ``key`` to ``value`` and returns the key's new version.

        With one of ``if_absent``, ``if_value`` or ``if_version`` the put applies only when the key
        is absent, holds exactly ``if_value``, or is at version ``if_version``; otherwise it raises
        FailedPrecondition saying what the key holds (its value too with ``return_current``).
        With ``ttl`` (seconds, fractions allowed) the key reads as absent that long after the
        server applies the put, and its space is reclaimed in the background.
        """
        req = _common.put_request(key, value, if_absent=if_absent, if_value=if_value,
                                  if_version=if_version, ttl=ttl, return_current=return_current)
        if self._router is not None:
            return self._router.for_key(req.key, lambda c: c._put_request(req))
        return self._put_request(req)

    def _put_request(self, req: kv_pb2.PutRequest) -> int:
        return int(self._call(self._kv.Put, req, write=True, kind="put").version)

    def delete(self, key: Bytes, *, if_value: Optional[Bytes] = None,
               if_version: Optional[int] = None, return_current: bool = False) -> None:
        """Removes ``key``; succeeds when the key is absent (unless a condition is given, which
        then fails with FailedPrecondition)."""
        req = _common.delete_request(key, if_value=if_value, if_version=if_version,
                                     return_current=return_current)
        if self._router is not None:
            self._router.for_key(req.key, lambda c: c._delete_request(req))
            return
        self._delete_request(req)

    def _delete_request(self, req: kv_pb2.DeleteRequest) -> None:
        self._call(self._kv.Delete, req, write=True, kind="delete")

    def batch_insert(self, mutations: Iterable[Mutation], *,
                     return_current: bool = False) -> int:
        """Applies Put and Delete mutations atomically and durably, in order (a later mutation
        of the same key wins). Returns the version every key it put now has.

        Preconditions on mutations (Put(k, v, if_version=3)) are all checked against the keys as
        they were before the batch; if one fails, nothing applies and FailedPrecondition names
        the mutation (``failed_mutation``).
        """
        req = _common.batch_insert_request(mutations, return_current)
        if self._router is not None:
            return self._router.batch_insert(req, lambda c: c._batch_insert_request(req))
        return self._batch_insert_request(req)

    def _batch_insert_request(self, req: kv_pb2.BatchInsertRequest) -> int:
        return int(self._call(self._kv.BatchInsert, req, write=True,
                              kind="batch_insert").version)

    def delete_range(self, start: Bytes = b"", end: Bytes = b"", *,
                     limit: int = 0) -> DeleteRangeResult:
        """Deletes the keys of [start, end) in one atomic call of at most ``limit`` keys (0: the
        server's limits.max_batch_entries) and returns a DeleteRangeResult. ``end`` empty means
        to the last key, ``start`` empty from the first."""
        req = _common.delete_range_request(start, end, limit)
        if self._router is not None:
            return self._router.delete_range(req.start, req.end, limit)
        r = self._call(self._kv.DeleteRange, req, write=True, kind="delete_range")
        return _common.delete_range_result(r)

    def delete_range_all(self, start: Bytes = b"", end: Bytes = b"", *, limit: int = 0) -> int:
        """Calls delete_range until no key of [start, end) is left; returns how many went. Each
        call is atomic; the whole is not."""
        deleted = 0
        while True:
            r = self.delete_range(start, end, limit=limit)
            deleted += r.deleted
            if not r.more:
                return deleted
            start = r.resume_key

    # Administration.

    def node_stats(self) -> List[Tuple[str, kv_pb2.StatsResponse]]:
        """Through an etcd:// address: (node name, Stats) of every node that owns a range.
        Through a node's address: that node's, named by its address."""
        if self._router is not None:
            return self._router.node_stats()
        return [(self.address, self.stats())]

    def backup(self, name: str = "", *, max_bytes_per_second: int = 0,
               timeout: float = 3600.0) -> admin_pb2.BackupResponse:
        """Backs the database up on the server while it keeps serving (grove.v1.Admin/Backup):
        a new directory ``name`` (empty: a generated one) under the server's backup.dir. Needs the
        admin role. Waits up to ``timeout`` seconds and returns the grove.v1.BackupResponse (its
        ``path`` on the server and ``last_lsn``, the backup point). Restore it with
        ``grovectl restore``."""
        if self._router is not None:
            raise _cluster.per_node("backup")
        req = admin_pb2.BackupRequest(name=name, max_bytes_per_second=max_bytes_per_second)
        resp: admin_pb2.BackupResponse = self._call(self._admin.Backup, req, write=True,
                                                    timeout=timeout)
        return resp

    def trace_start(self, sample: float = 0.01, *, duration: float = 0, name: str = "",
                    hash_keys: bool = False) -> admin_pb2.TraceStatusResponse:
        """Starts recording a sampled trace of the calls the server serves (admin role; the
        server needs trace.dir): ``sample`` of the calls, for ``duration`` seconds (0: until
        trace_stop), into ``name``.trace (empty: a generated name), keys hashed with
        ``hash_keys``. Returns the trace's status; `grovectl advise` replays the file
        (docs/operations.md, "Choose the index variant")."""
        if self._router is not None:
            raise _cluster.per_node("trace_start")
        req = _common.start_trace_request(sample, duration, name, hash_keys)
        resp: admin_pb2.TraceStatusResponse = self._call(self._admin.StartTrace, req, write=True)
        return resp

    def trace_stop(self) -> admin_pb2.TraceStatusResponse:
        """Ends the running trace (FailedPrecondition when none runs) and returns its status."""
        if self._router is not None:
            raise _cluster.per_node("trace_stop")
        resp: admin_pb2.TraceStatusResponse = self._call(
            self._admin.StopTrace, admin_pb2.StopTraceRequest(), write=True)
        return resp

    def trace_status(self) -> admin_pb2.TraceStatusResponse:
        """The running or last trace: path, records written and dropped, why it ended."""
        if self._router is not None:
            raise _cluster.per_node("trace_status")
        resp: admin_pb2.TraceStatusResponse = self._call(self._admin.GetTraceStatus,
                                                         admin_pb2.TraceStatusRequest())
        return resp

    # Plumbing.

    def _metadata(self) -> _common.Metadata:
        base = self._s.metadata()
        if not self._map_version:
            return base
        return (base or ()) + (("grove-map-version", str(self._map_version)),)

    def _connected(self) -> bool:
        ready = grpc.channel_ready_future(self._channel)
        try:
            ready.result(timeout=self._s.connect_wait())
            return True
        except grpc.FutureTimeoutError:
            ready.cancel()  # unsubscribes, so that the connectivity poller can stop
            return False

    def _call(self, method: Any, req: Any, write: bool = False, timeout: Optional[float] = None,
              kind: Optional[str] = None) -> Any:
        """Calls ``method`` with the retry rules; ``kind`` (the SubRequest field) sends it over
        the Batch stream when the client has one."""
        via_stream = kind is not None and self._batcher is not None and not self._no_stream
        timeout = timeout or self._s.timeout
        last: errors.GroveError = errors.Unavailable("no attempt made")
        for attempt in range(self._s.max_attempts):
            if attempt > 0:
                time.sleep(self._s.backoff(attempt - 1))
            if write and not self._connected():
                last = errors.Unavailable(
                    f"no connection to {self.address} (server down or unreachable, or the TLS "
                    "handshake failed); the write was not sent")
                continue
            try:
                if via_stream:
                    assert kind is not None
                    try:
                        return self._via_stream(kind, req, timeout)
                    except _stream.StreamFailure as f:
                        if f.code != grpc.StatusCode.UNIMPLEMENTED:
                            raise
                        self._no_stream = True  # a server from before Batch: unary from now on
                        via_stream = False
                return method(req, timeout=timeout, metadata=self._metadata())
            except grpc.RpcError as e:
                err = errors.from_rpc_error(e)
                code = e.code()
                not_applied = _common.not_applied(e.trailing_metadata())
            except _stream.StreamFailure as f:
                err = errors.from_status(f.code, f.message)
                code = f.code
                not_applied = f.not_applied
            except _SubError as e:
                err, code, not_applied = e.error, e.code, e.not_applied
            if code != grpc.StatusCode.UNAVAILABLE:
                raise err from None
            if write and not not_applied:
                raise _common.outcome_unknown(err) from None
            last = err
        raise last

    def _via_stream(self, kind: str, req: Any, timeout: float) -> Any:
        assert self._batcher is not None
        sub = kv_pb2.SubRequest()
        getattr(sub, kind).CopyFrom(req)
        result = self._batcher.call(sub, time.monotonic() + timeout)
        if result.status.code != 0:
            meta = dict(result.status.metadata)
            code = _CODES.get(result.status.code, grpc.StatusCode.UNKNOWN)
            raise _SubError(errors.from_status_metadata(code, result.status.message, meta), code,
                            _common.NOT_APPLIED_METADATA in meta)
        return getattr(result, kind)

    def _scan(self, req: kv_pb2.ScanRequest, limit: int, page_size: int,
              stopped_at: Optional[List[bytes]] = None) -> Iterator[Tuple[bytes, bytes]]:
        """The scan of one node. ``stopped_at`` gets the key where the node's range ended the
        scan short of its end (a cluster node's trailing grove-scan-stopped-at-bin)."""
        delivered = 0
        failures = 0
        while True:
            want = _common.scan_page_limit(limit, page_size, delivered)
            if want < 0:
                return
            req.limit = want
            stream = self._kv.Scan(req, timeout=self._s.timeout, metadata=self._metadata())
            more = False
            last_key: Optional[bytes] = None
            try:
                for msg in stream:
                    for kv in msg.entries:
                        delivered += 1
                        yield kv.key, kv.value
                        if limit and delivered >= limit:
                            stream.cancel()
                            return
                    if msg.entries:
                        last_key = msg.last_key
                    more = msg.more
            except grpc.RpcError as e:
                if e.code() != grpc.StatusCode.UNAVAILABLE:
                    raise errors.from_rpc_error(e) from None
                # A stream that delivered entries made progress; only consecutive fruitless
                # attempts count.
                failures = 1 if last_key is not None else failures + 1
                if failures >= self._s.max_attempts:
                    raise errors.from_rpc_error(e) from None
                time.sleep(self._s.backoff(failures - 1))
                more = True
            finally:
                stream.cancel()  # no-op once finished; frees the stream when the caller stops
            if not more:
                if stopped_at is not None:
                    for k, v in stream.trailing_metadata() or ():
                        if k == _SCAN_STOPPED_AT:
                            stopped_at.append(bytes(v))
                return
            _common.scan_resume(req, last_key)
