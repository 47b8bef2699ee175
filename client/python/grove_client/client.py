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
"""

import random
import time
from collections import namedtuple

import grpc

from grove.v1 import admin_pb2, admin_pb2_grpc, kv_pb2, kv_pb2_grpc
from grove_health import health_pb2, health_pb2_grpc

from . import _stream, errors

NOT_APPLIED_METADATA = "grove-not-applied"

Put = namedtuple("Put", ["key", "value", "if_absent", "if_value", "if_version", "ttl"],
                 defaults=(False, None, None, None))
Put.__doc__ = ("A put in a batch_insert: set ``key`` to ``value``, optionally only if the key is "
               "absent, holds ``if_value``, or is at version ``if_version``; with ``ttl`` "
               "(seconds) it expires.")
DeleteRangeResult = namedtuple("DeleteRangeResult",
                               ["deleted", "more", "resume_key", "limited_by", "version"])
DeleteRangeResult.__doc__ = (
    "What one delete_range call did: ``deleted`` keys; when ``more``, a limit (``limited_by``: "
    "\"limit\" or \"limits.max_batch_entries\") stopped it and the next call starts at "
    "``resume_key``; ``version`` is the delete's log sequence number (0 when nothing went).")
ValueInfo = namedtuple("ValueInfo", ["value", "version", "expires_at_ms"])
ValueInfo.__doc__ = ("A value with its version and expiry (Unix milliseconds from which the key "
                     "reads as absent; 0: it does not expire).")

# The longest time to live the server accepts (100 years), in milliseconds.
MAX_TTL_MS = 100 * 365 * 24 * 3600 * 1000


def _ttl_ms(what, ttl):
    """Seconds (int or float) to whole milliseconds; None or 0 means no expiry."""
    if ttl is None:
        return 0
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)):
        raise errors.InvalidArgument(f"{what}: ttl must be a number of seconds")
    ms = int(round(ttl * 1000))
    if ttl < 0 or (ttl > 0 and ms == 0) or ms > MAX_TTL_MS:
        raise errors.InvalidArgument(
            f"{what}: ttl must be at least 0.001 s and at most 100 years, got {ttl}")
    return ms
Delete = namedtuple("Delete", ["key", "if_value", "if_version"], defaults=(None, None))
Delete.__doc__ = ("A delete in a batch_insert: remove ``key`` (absent keys are fine), optionally "
                  "only if it holds ``if_value`` or is at version ``if_version``.")


def _precondition(what, if_absent=False, if_value=None, if_version=None):
    """A kv_pb2.Precondition, or None when no condition is given."""
    given = sum([bool(if_absent), if_value is not None, if_version is not None])
    if given > 1:
        raise errors.InvalidArgument(
            f"{what}: give at most one of if_absent, if_value, if_version")
    if if_absent:
        return kv_pb2.Precondition(absent=True)
    if if_value is not None:
        return kv_pb2.Precondition(value_equals=_bytes(f"{what}.if_value", if_value))
    if if_version is not None:
        if not isinstance(if_version, int) or if_version < 0:
            raise errors.InvalidArgument(f"{what}.if_version: must be a version (an int >= 0)")
        return kv_pb2.Precondition(version_equals=if_version)
    return None


def _bytes(what, v):
    if isinstance(v, bytes):
        return v
    if isinstance(v, (bytearray, memoryview)):
        return bytes(v)
    if isinstance(v, str):
        return v.encode("utf-8")
    raise TypeError(f"{what}: expected bytes or str, got {type(v).__name__}")


def _read(what, path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise errors.InvalidArgument(f"{what}: cannot read '{path}': {e.strerror}") from None


# grpc.StatusCode by its number.
_CODES = {c.value[0]: c for c in grpc.StatusCode}


class _SubError(Exception):
    """A sub-request's error status: the exception to raise, its code, and whether the server
    marked it not applied."""

    def __init__(self, error, code, not_applied):
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
    """

    def __init__(self, address="127.0.0.1:7400", *, token=None, tls=False, ca_file=None,
                 cert_file=None, key_file=None, server_name=None, timeout=10.0, max_attempts=5,
                 initial_backoff=0.05, max_backoff=2.0, connect_timeout=1.0, transport="stream"):
        if transport not in ("stream", "unary"):
            raise errors.InvalidArgument(
                f"transport: must be \"stream\" or \"unary\", got {transport!r}")
        if not (timeout > 0):
            raise errors.InvalidArgument(f"timeout: must be positive, got {timeout}")
        if max_attempts < 1:
            raise errors.InvalidArgument(f"max_attempts: must be at least 1, got {max_attempts}")
        if (cert_file is None) != (key_file is None):
            raise errors.InvalidArgument("cert_file and key_file must be given together")
        if not tls and (ca_file or cert_file or server_name):
            raise errors.InvalidArgument("ca_file, cert_file, key_file and server_name need tls=True")
        self.address = address
        self._token = token
        self._timeout = float(timeout)
        self._max_attempts = int(max_attempts)
        self._initial_backoff = float(initial_backoff)
        self._max_backoff = float(max_backoff)
        self._connect_timeout = float(connect_timeout)
        # Accept any message the server's own limits allow (gRPC's default is 4 MiB).
        options = [("grpc.max_receive_message_length", -1)]
        if tls:
            creds = grpc.ssl_channel_credentials(
                root_certificates=_read("ca_file", ca_file) if ca_file else None,
                private_key=_read("key_file", key_file) if key_file else None,
                certificate_chain=_read("cert_file", cert_file) if cert_file else None)
            if server_name:
                options.append(("grpc.ssl_target_name_override", server_name))
            self._channel = grpc.secure_channel(address, creds, options=options)
        else:
            self._channel = grpc.insecure_channel(address, options=options)
        self._kv = kv_pb2_grpc.KVStub(self._channel)
        self._admin = admin_pb2_grpc.AdminStub(self._channel)
        self._health = health_pb2_grpc.HealthStub(self._channel)
        self._batcher = _stream.Batcher(self._kv, self._metadata()) \
            if transport == "stream" else None
        self._no_stream = False  # the server answered Batch with UNIMPLEMENTED

    def close(self):
        """Closes the connection; calls in flight fail with CANCELLED."""
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

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # Reads.

    def get(self, key):
        """The value of ``key`` (bytes), or None when the key is absent."""
        req = kv_pb2.GetRequest(key=_bytes("key", key))
        resp = self._call(self._kv.Get, req, kind="get")
        return resp.value if resp.found else None

    def get_versioned(self, key):
        """(value, version) of ``key``, or (None, 0) when absent. The version rises with every
        write of the key; pass it to put(..., if_version=) for a compare-and-swap."""
        info = self.get_info(key)
        return info.value, info.version

    def get_info(self, key):
        """A ValueInfo (value, version, expires_at_ms) of ``key``; value None when absent."""
        req = kv_pb2.GetRequest(key=_bytes("key", key))
        resp = self._call(self._kv.Get, req, kind="get")
        if not resp.found:
            return ValueInfo(None, 0, 0)
        return ValueInfo(resp.value, resp.version, resp.expires_at_ms)

    def batch_get(self, keys):
        """A list answering ``keys`` in order: each value, or None for an absent key."""
        req = kv_pb2.BatchGetRequest(keys=[_bytes(f"keys[{i}]", k) for i, k in enumerate(keys)])
        resp = self._call(self._kv.BatchGet, req, kind="batch_get")
        return [r.value if r.found else None for r in resp.results]

    def scan(self, start=b"", end=b"", *, limit=0, reverse=False, keys_only=False,
             page_size=10000):
        """Yields (key, value) pairs of [start, end) in key order, or reversed.

        ``end`` empty means to the last key; ``limit`` 0 means every key in the range. With
        ``keys_only`` the values are empty (large values are not read). The iterator asks for
        ``page_size`` entries per request (at most the server's limits.max_scan_limit) and resumes
        after a broken stream; closing it early cancels the stream.
        """
        req = kv_pb2.ScanRequest(start=_bytes("start", start), end=_bytes("end", end),
                                 reverse=reverse, keys_only=keys_only)
        if limit < 0 or page_size < 0:
            raise errors.InvalidArgument("limit and page_size must not be negative")
        return self._scan(req, limit, page_size)

    def stats(self):
        """The server's figures: a grove.v1.StatsResponse message.

        ``google.protobuf.json_format.MessageToDict(client.stats())`` turns it into a dict.
        """
        return self._call(self._kv.Stats, kv_pb2.StatsRequest())

    def health(self, service=""):
        """The serving status of ``service`` ("" = the whole server), e.g. "SERVING".

        Not retried: a health probe reports what it sees now.
        """
        req = health_pb2.HealthCheckRequest(service=service)
        try:
            resp = self._health.Check(req, timeout=self._timeout, metadata=self._metadata())
        except grpc.RpcError as e:
            raise errors.from_rpc_error(e) from None
        return health_pb2.HealthCheckResponse.ServingStatus.Name(resp.status)

    # Writes: idempotent, durable once they return.

    def put(self, key, value, *, if_absent=False, if_value=None, if_version=None, ttl=None,
            return_current=False):
        """Sets ``key`` to ``value`` and returns the key's new version.

        With one of ``if_absent``, ``if_value`` or ``if_version`` the put applies only when the key
        is absent, holds exactly ``if_value``, or is at version ``if_version``; otherwise it raises
        FailedPrecondition saying what the key holds (its value too with ``return_current``).
        With ``ttl`` (seconds, fractions allowed) the key reads as absent that long after the
        server applies the put, and its space is reclaimed in the background.
        """
        req = kv_pb2.PutRequest(key=_bytes("key", key), value=_bytes("value", value),
                                return_current=return_current, ttl_ms=_ttl_ms("put", ttl))
        p = _precondition("put", if_absent, if_value, if_version)
        if p is not None:
            req.precondition.CopyFrom(p)
        return self._call(self._kv.Put, req, write=True, kind="put").version

    def delete(self, key, *, if_value=None, if_version=None, return_current=False):
        """Removes ``key``; succeeds when the key is absent (unless a condition is given, which
        then fails with FailedPrecondition)."""
        req = kv_pb2.DeleteRequest(key=_bytes("key", key), return_current=return_current)
        p = _precondition("delete", False, if_value, if_version)
        if p is not None:
            req.precondition.CopyFrom(p)
        self._call(self._kv.Delete, req, write=True, kind="delete")

    def batch_insert(self, mutations, *, return_current=False):
        """Applies Put and Delete mutations atomically and durably, in order (a later mutation
        of the same key wins). Returns the version every key it put now has.

        Preconditions on mutations (Put(k, v, if_version=3)) are all checked against the keys as
        they were before the batch; if one fails, nothing applies and FailedPrecondition names
        the mutation (``failed_mutation``).
        """
        req = kv_pb2.BatchInsertRequest(return_current=return_current)
        for i, m in enumerate(mutations):
            field = f"mutations[{i}]"
            if isinstance(m, Put):
                pm = req.mutations.add(type=kv_pb2.Mutation.PUT, key=_bytes(f"{field}.key", m.key),
                                       value=_bytes(f"{field}.value", m.value),
                                       ttl_ms=_ttl_ms(field, m.ttl))
                p = _precondition(field, m.if_absent, m.if_value, m.if_version)
            elif isinstance(m, Delete):
                pm = req.mutations.add(type=kv_pb2.Mutation.DELETE, key=_bytes(f"{field}.key", m.key))
                p = _precondition(field, False, m.if_value, m.if_version)
            else:
                raise TypeError(f"{field}: expected Put or Delete, got {type(m).__name__}")
            if p is not None:
                pm.precondition.CopyFrom(p)
        return self._call(self._kv.BatchInsert, req, write=True, kind="batch_insert").version

    def delete_range(self, start=b"", end=b"", *, limit=0):
        """Deletes the keys of [start, end) in one atomic call of at most ``limit`` keys (0: the
        server's limits.max_batch_entries) and returns a DeleteRangeResult. ``end`` empty means
        to the last key, ``start`` empty from the first."""
        if limit < 0:
            raise errors.InvalidArgument("limit: must not be negative")
        req = kv_pb2.DeleteRangeRequest(start=_bytes("start", start), end=_bytes("end", end),
                                        limit=limit)
        r = self._call(self._kv.DeleteRange, req, write=True, kind="delete_range")
        return DeleteRangeResult(r.deleted, r.more, r.resume_key, r.limited_by, r.version)

    def delete_range_all(self, start=b"", end=b"", *, limit=0):
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

    def backup(self, name="", *, max_bytes_per_second=0, timeout=3600.0):
        """Backs the database up on the server while it keeps serving (grove.v1.Admin/Backup):
        a new directory ``name`` (empty: a generated one) under the server's backup.dir. Needs the
        admin role. Waits up to ``timeout`` seconds and returns the grove.v1.BackupResponse (its
        ``path`` on the server and ``last_lsn``, the backup point). Restore it with
        ``grovectl restore``."""
        req = admin_pb2.BackupRequest(name=name, max_bytes_per_second=max_bytes_per_second)
        return self._call(self._admin.Backup, req, write=True, timeout=timeout)

    # Plumbing.

    def _metadata(self):
        # Plain metadata rather than call credentials: gRPC refuses call credentials on plaintext
        # channels, and a loopback listener is plaintext.
        return (("authorization", f"Bearer {self._token}"),) if self._token else None

    def _backoff(self, retry):
        d = min(self._initial_backoff * (2 ** min(retry, 16)), self._max_backoff)
        return d / 2 + random.uniform(0, d / 2)

    def _connected(self):
        wait = min(self._timeout, self._connect_timeout)
        ready = grpc.channel_ready_future(self._channel)
        try:
            ready.result(timeout=wait)
            return True
        except grpc.FutureTimeoutError:
            ready.cancel()  # unsubscribes, so that the connectivity poller can stop
            return False

    def _call(self, method, req, write=False, timeout=None, kind=None):
        """Calls ``method`` with the retry rules; ``kind`` (the SubRequest field) sends it over
        the Batch stream when the client has one."""
        via_stream = kind is not None and self._batcher is not None and not self._no_stream
        last = None
        for attempt in range(self._max_attempts):
            if attempt > 0:
                time.sleep(self._backoff(attempt - 1))
            if write and not self._connected():
                last = errors.Unavailable(
                    f"no connection to {self.address} (server down or unreachable, or the TLS "
                    "handshake failed); the write was not sent")
                continue
            try:
                if via_stream:
                    try:
                        return self._via_stream(kind, req, timeout or self._timeout)
                    except _stream.StreamFailure as f:
                        if f.code != grpc.StatusCode.UNIMPLEMENTED:
                            raise
                        self._no_stream = True  # a server from before Batch: unary from now on
                        via_stream = False
                return method(req, timeout=timeout or self._timeout, metadata=self._metadata())
            except grpc.RpcError as e:
                err = errors.from_rpc_error(e)
                code = e.code()
                not_applied = any(k == NOT_APPLIED_METADATA
                                  for k, _ in (e.trailing_metadata() or ()))
            except _stream.StreamFailure as f:
                err = errors.from_status(f.code, f.message)
                code = f.code
                not_applied = f.not_applied
            except _SubError as e:
                err, code, not_applied = e.error, e.code, e.not_applied
            if code != grpc.StatusCode.UNAVAILABLE:
                raise err from None
            if write and not not_applied:
                raise errors.OutcomeUnknown(
                    f"{err.message} (the write was sent; it may or may not have been "
                    "applied, so it is not retried)") from None
            last = err
        raise last

    def _via_stream(self, kind, req, timeout):
        sub = kv_pb2.SubRequest()
        getattr(sub, kind).CopyFrom(req)
        result = self._batcher.call(sub, time.monotonic() + timeout)
        if result.status.code != 0:
            meta = dict(result.status.metadata)
            code = _CODES.get(result.status.code, grpc.StatusCode.UNKNOWN)
            raise _SubError(errors.from_status_metadata(code, result.status.message, meta), code,
                            NOT_APPLIED_METADATA in meta)
        return getattr(result, kind)

    def _scan(self, req, limit, page_size):
        delivered = 0
        failures = 0
        while True:
            want = page_size
            if limit:
                remaining = limit - delivered
                if remaining == 0:
                    return
                if want == 0 or remaining < want:
                    want = remaining
            req.limit = want
            stream = self._kv.Scan(req, timeout=self._timeout, metadata=self._metadata())
            more = False
            last_key = None
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
                if failures >= self._max_attempts:
                    raise errors.from_rpc_error(e) from None
                time.sleep(self._backoff(failures - 1))
                more = True
            finally:
                stream.cancel()  # no-op once finished; frees the stream when the caller stops
            if not more:
                return
            # Continue after the last key yielded: forward, from the next possible key; reverse,
            # up to (excluding) it.
            if last_key is not None:
                if req.reverse:
                    req.end = last_key
                else:
                    req.start = last_key + b"\x00"
