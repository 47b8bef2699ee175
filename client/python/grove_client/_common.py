"""What the blocking Client and the asyncio AsyncClient share: the mutation and result types,
argument checks, request building, the retry delay and the channel's options.

Nothing here does IO; each client sends what these functions build.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Iterable, List, NamedTuple, Optional, Sequence, Tuple, Union

import grpc

from grove.v1 import admin_pb2, kv_pb2

from . import errors

NOT_APPLIED_METADATA = "grove-not-applied"

# What a key or value may be given as; a str is sent as UTF-8.
Bytes = Union[bytes, bytearray, memoryview, str]
Metadata = Optional[Tuple[Tuple[str, str], ...]]

# The longest time to live the server accepts (100 years), in milliseconds.
MAX_TTL_MS = 100 * 365 * 24 * 3600 * 1000


class Put(NamedTuple):
    """A put in a batch_insert: set ``key`` to ``value``, optionally only if the key is absent,
    holds ``if_value``, or is at version ``if_version``; with ``ttl`` (seconds) it expires."""

    key: Bytes
    value: Bytes
    if_absent: bool = False
    if_value: Optional[Bytes] = None
    if_version: Optional[int] = None
    ttl: Optional[float] = None


class Delete(NamedTuple):
    """A delete in a batch_insert: remove ``key`` (absent keys are fine), optionally only if it
    holds ``if_value`` or is at version ``if_version``."""

    key: Bytes
    if_value: Optional[Bytes] = None
    if_version: Optional[int] = None


Mutation = Union[Put, Delete]


class DeleteRangeResult(NamedTuple):
    """What one delete_range call did: ``deleted`` keys; when ``more``, a limit (``limited_by``:
    "limit" or "limits.max_batch_entries") stopped it and the next call starts at
    ``resume_key``; ``version`` is the delete's log sequence number (0 when nothing went)."""

    deleted: int
    more: bool
    resume_key: bytes
    limited_by: str
    version: int


class ValueInfo(NamedTuple):
    """A value with its version and expiry (Unix milliseconds from which the key reads as
    absent; 0: it does not expire). ``value`` is None for an absent key."""

    value: Optional[bytes]
    version: int
    expires_at_ms: int


def to_bytes(what: str, v: object) -> bytes:
    """``v`` as bytes (a str as UTF-8); TypeError naming ``what`` for anything else."""
    if isinstance(v, bytes):
        return v
    if isinstance(v, (bytearray, memoryview)):
        return bytes(v)
    if isinstance(v, str):
        return v.encode("utf-8")
    raise TypeError(f"{what}: expected bytes or str, got {type(v).__name__}")


def ttl_ms(what: str, ttl: Optional[float]) -> int:
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


def precondition(what: str, if_absent: bool = False, if_value: Optional[Bytes] = None,
                 if_version: Optional[int] = None) -> Optional[kv_pb2.Precondition]:
    """A kv_pb2.Precondition, or None when no condition is given."""
    given = sum([bool(if_absent), if_value is not None, if_version is not None])
    if given > 1:
        raise errors.InvalidArgument(
            f"{what}: give at most one of if_absent, if_value, if_version")
    if if_absent:
        return kv_pb2.Precondition(absent=True)
    if if_value is not None:
        return kv_pb2.Precondition(value_equals=to_bytes(f"{what}.if_value", if_value))
    if if_version is not None:
        if isinstance(if_version, bool) or not isinstance(if_version, int) or if_version < 0:
            raise errors.InvalidArgument(f"{what}.if_version: must be a version (an int >= 0)")
        return kv_pb2.Precondition(version_equals=if_version)
    return None


def get_request(key: Bytes) -> kv_pb2.GetRequest:
    return kv_pb2.GetRequest(key=to_bytes("key", key))


def batch_get_request(keys: Iterable[Bytes]) -> kv_pb2.BatchGetRequest:
    return kv_pb2.BatchGetRequest(keys=[to_bytes(f"keys[{i}]", k) for i, k in enumerate(keys)])


def value_info(resp: kv_pb2.GetResponse) -> ValueInfo:
    if not resp.found:
        return ValueInfo(None, 0, 0)
    return ValueInfo(resp.value, resp.version, resp.expires_at_ms)


def batch_get_values(resp: kv_pb2.BatchGetResponse) -> List[Optional[bytes]]:
    return [r.value if r.found else None for r in resp.results]


def scan_request(start: Bytes, end: Bytes, limit: int, page_size: int, reverse: bool,
                 keys_only: bool) -> kv_pb2.ScanRequest:
    if limit < 0 or page_size < 0:
        raise errors.InvalidArgument("limit and page_size must not be negative")
    return kv_pb2.ScanRequest(start=to_bytes("start", start), end=to_bytes("end", end),
                              reverse=reverse, keys_only=keys_only)


def scan_page_limit(limit: int, page_size: int, delivered: int) -> int:
    """How many entries the next scan request asks for (0: the server's most); -1 when
    ``limit`` entries were delivered already."""
    want = page_size
    if limit:
        remaining = limit - delivered
        if remaining == 0:
            return -1
        if want == 0 or remaining < want:
            want = remaining
    return want


def scan_resume(req: kv_pb2.ScanRequest, last_key: Optional[bytes]) -> None:
    """Moves ``req`` past ``last_key``, the last key yielded: forward, to the next possible
    key; reverse, up to (excluding) it."""
    if last_key is None:
        return
    if req.reverse:
        req.end = last_key
    else:
        req.start = last_key + b"\x00"


def put_request(key: Bytes, value: Bytes, *, if_absent: bool, if_value: Optional[Bytes],
                if_version: Optional[int], ttl: Optional[float],
                return_current: bool) -> kv_pb2.PutRequest:
    req = kv_pb2.PutRequest(key=to_bytes("key", key), value=to_bytes("value", value),
                            return_current=return_current, ttl_ms=ttl_ms("put", ttl))
    p = precondition("put", if_absent, if_value, if_version)
    if p is not None:
        req.precondition.CopyFrom(p)
    return req


def delete_request(key: Bytes, *, if_value: Optional[Bytes], if_version: Optional[int],
                   return_current: bool) -> kv_pb2.DeleteRequest:
    req = kv_pb2.DeleteRequest(key=to_bytes("key", key), return_current=return_current)
    p = precondition("delete", False, if_value, if_version)
    if p is not None:
        req.precondition.CopyFrom(p)
    return req


def batch_insert_request(mutations: Iterable[Mutation],
                         return_current: bool) -> kv_pb2.BatchInsertRequest:
    req = kv_pb2.BatchInsertRequest(return_current=return_current)
    for i, m in enumerate(mutations):
        field = f"mutations[{i}]"
        if isinstance(m, Put):
            pm = req.mutations.add(type=kv_pb2.Mutation.PUT, key=to_bytes(f"{field}.key", m.key),
                                   value=to_bytes(f"{field}.value", m.value),
                                   ttl_ms=ttl_ms(field, m.ttl))
            p = precondition(field, m.if_absent, m.if_value, m.if_version)
        elif isinstance(m, Delete):
            pm = req.mutations.add(type=kv_pb2.Mutation.DELETE,
                                   key=to_bytes(f"{field}.key", m.key))
            p = precondition(field, False, m.if_value, m.if_version)
        else:
            raise TypeError(f"{field}: expected Put or Delete, got {type(m).__name__}")
        if p is not None:
            pm.precondition.CopyFrom(p)
    return req


def delete_range_request(start: Bytes, end: Bytes, limit: int) -> kv_pb2.DeleteRangeRequest:
    if limit < 0:
        raise errors.InvalidArgument("limit: must not be negative")
    return kv_pb2.DeleteRangeRequest(start=to_bytes("start", start), end=to_bytes("end", end),
                                     limit=limit)


def start_trace_request(sample: float, duration: float, name: str,
                        hash_keys: bool) -> admin_pb2.StartTraceRequest:
    """The StartTrace request; the server checks the name and the sample's range."""
    if isinstance(sample, bool) or not isinstance(sample, (int, float)):
        raise TypeError(f"sample: expected a number, got {type(sample).__name__}")
    if isinstance(duration, bool) or not isinstance(duration, (int, float)) or duration < 0:
        raise errors.InvalidArgument(
            f"duration: must be a number of seconds >= 0 (0: until stopped), got {duration}")
    return admin_pb2.StartTraceRequest(sample=float(sample), duration_seconds=float(duration),
                                       name=name, hash_keys=hash_keys)


def delete_range_result(r: kv_pb2.DeleteRangeResponse) -> DeleteRangeResult:
    return DeleteRangeResult(r.deleted, r.more, r.resume_key, r.limited_by, r.version)


def not_applied(trailing_metadata: Optional[Sequence[Tuple[str, object]]]) -> bool:
    """Whether the server marked a refused call not applied (safe to resend)."""
    return any(k == NOT_APPLIED_METADATA for k, _ in (trailing_metadata or ()))


def outcome_unknown(err: errors.GroveError) -> errors.OutcomeUnknown:
    return errors.OutcomeUnknown(
        f"{err.message} (the write was sent; it may or may not have been applied, so it is not "
        "retried)")


@dataclass(frozen=True)
class Settings:
    """The options both clients take, checked once (see Client's docstring)."""

    address: str
    token: Optional[str]
    timeout: float
    max_attempts: int
    initial_backoff: float
    max_backoff: float
    connect_timeout: float

    @staticmethod
    def make(address: str, token: Optional[str], timeout: float, max_attempts: int,
             initial_backoff: float, max_backoff: float, connect_timeout: float) -> Settings:
        if not isinstance(address, str) or not address:
            raise errors.InvalidArgument("address: must be \"host:port\"")
        if not (timeout > 0):
            raise errors.InvalidArgument(f"timeout: must be positive, got {timeout}")
        if max_attempts < 1:
            raise errors.InvalidArgument(f"max_attempts: must be at least 1, got {max_attempts}")
        if initial_backoff < 0 or max_backoff < 0:
            raise errors.InvalidArgument("initial_backoff and max_backoff must not be negative")
        return Settings(address, token, float(timeout), int(max_attempts), float(initial_backoff),
                        float(max_backoff), float(connect_timeout))

    def metadata(self) -> Metadata:
        # Plain metadata rather than call credentials: gRPC refuses call credentials on plaintext
        # channels, and a loopback listener is plaintext.
        return (("authorization", f"Bearer {self.token}"),) if self.token else None

    def backoff(self, retry: int) -> float:
        """The delay before retry number ``retry`` (0-based): doubling from initial_backoff up
        to max_backoff, half of it random so that many clients do not retry in lockstep."""
        d = min(self.initial_backoff * (1 << min(retry, 16)), self.max_backoff)
        return d / 2 + random.uniform(0, d / 2)

    def connect_wait(self) -> float:
        return min(self.timeout, self.connect_timeout)


@dataclass(frozen=True)
class ChannelSpec:
    """How to reach the server: TLS credentials (None: plaintext) and the channel's options."""

    credentials: Optional[grpc.ChannelCredentials]
    options: List[Tuple[str, object]]


def channel_spec(tls: bool, ca_file: Optional[str], cert_file: Optional[str],
                 key_file: Optional[str], server_name: Optional[str]) -> ChannelSpec:
    if (cert_file is None) != (key_file is None):
        raise errors.InvalidArgument("cert_file and key_file must be given together")
    if not tls and (ca_file or cert_file or server_name):
        raise errors.InvalidArgument("ca_file, cert_file, key_file and server_name need tls=True")
    # Accept any message the server's own limits allow (gRPC's default is 4 MiB).
    options: List[Tuple[str, object]] = [("grpc.max_receive_message_length", -1)]
    if not tls:
        return ChannelSpec(None, options)
    creds = grpc.ssl_channel_credentials(
        root_certificates=_read("ca_file", ca_file) if ca_file else None,
        private_key=_read("key_file", key_file) if key_file else None,
        certificate_chain=_read("cert_file", cert_file) if cert_file else None)
    if server_name:
        options.append(("grpc.ssl_target_name_override", server_name))
    return ChannelSpec(creds, options)


def _read(what: str, path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise errors.InvalidArgument(f"{what}: cannot read '{path}': {e.strerror}") from None
