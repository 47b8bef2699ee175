"""Typed exceptions for groved's gRPC status codes.

Every failed call raises a subclass of :class:`GroveError`. The server's message names the
offending field first ("mutations[3].key: 200 bytes is over limits.max_key_bytes (128)"); that
prefix is available as :attr:`GroveError.field`.
"""

from __future__ import annotations

import re
from typing import Dict, Mapping, Optional, Type, Union

import grpc

_FIELD = re.compile(r"^([A-Za-z_][A-Za-z0-9_.\[\]]*): ")


class GroveError(Exception):
    """A call failed. ``code`` is the grpc.StatusCode, ``message`` the server's text."""

    code: grpc.StatusCode = grpc.StatusCode.UNKNOWN

    def __init__(self, message: str, code: Optional[grpc.StatusCode] = None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    @property
    def field(self) -> Optional[str]:
        """The request field the server named (e.g. ``"key"``), or None."""
        m = _FIELD.match(self.message)
        return m.group(1) if m else None

    def __str__(self) -> str:
        return f"{self.code.name}: {self.message}"


class InvalidArgument(GroveError):
    """The request is malformed (an empty key, start after end); the field is named."""

    code = grpc.StatusCode.INVALID_ARGUMENT


class NotFound(GroveError):
    code = grpc.StatusCode.NOT_FOUND


class AlreadyExists(GroveError):
    code = grpc.StatusCode.ALREADY_EXISTS


class FailedPrecondition(GroveError):
    """A write's precondition did not hold; nothing was applied.

    ``current_found``, ``current_version`` and ``current_value`` say what the key holds now
    (``current_value`` only when the write asked for it with ``return_current=True``);
    ``failed_mutation`` is the index of the mutation whose precondition failed (batch_insert).
    """

    code = grpc.StatusCode.FAILED_PRECONDITION
    current_found: Optional[bool] = None
    current_version: Optional[int] = None
    current_value: Optional[bytes] = None
    failed_mutation: Optional[int] = None


class ResourceExhausted(GroveError):
    """A configured limit was exceeded (the limit is named) or the disk is full."""

    code = grpc.StatusCode.RESOURCE_EXHAUSTED


class Unavailable(GroveError):
    """The server is starting, draining or unreachable (after the client's own retries)."""

    code = grpc.StatusCode.UNAVAILABLE


class OutcomeUnknown(Unavailable):
    """A write was sent and its connection broke: it may or may not have been applied.

    The client does not retry such a write: a blind retry could apply it again after another
    client's later write to the same key. Read the key to learn the outcome.
    """


class NotOwner(GroveError):
    """Cluster mode: a key of the call is in a range another node owns; nothing was applied.

    ``map_version`` is the shard map version the node decided by. Send the call to the owner
    (``grovectl cluster status`` lists the ranges; docs/cluster.md).
    """

    code = grpc.StatusCode.OUT_OF_RANGE
    map_version: Optional[int] = None


class DeadlineExceeded(GroveError):
    code = grpc.StatusCode.DEADLINE_EXCEEDED


class DataLoss(GroveError):
    """A page failed its checksum; the data was not returned."""

    code = grpc.StatusCode.DATA_LOSS


class Unauthenticated(GroveError):
    """A bearer token is required and was missing or unknown."""

    code = grpc.StatusCode.UNAUTHENTICATED


class PermissionDenied(GroveError):
    """The token's role does not allow the call (a read token writing)."""

    code = grpc.StatusCode.PERMISSION_DENIED


class Cancelled(GroveError):
    code = grpc.StatusCode.CANCELLED


class Internal(GroveError):
    """An IO error or a failed fsync on the server (logged there)."""

    code = grpc.StatusCode.INTERNAL


class Unimplemented(GroveError):
    """The server does not know the call (an older groved)."""

    code = grpc.StatusCode.UNIMPLEMENTED


_BY_CODE: Dict[grpc.StatusCode, Type[GroveError]] = {
    cls.code: cls
    for cls in (InvalidArgument, NotFound, AlreadyExists, FailedPrecondition, ResourceExhausted,
                Unavailable, NotOwner, DeadlineExceeded, DataLoss, Unauthenticated,
                PermissionDenied, Cancelled, Internal, Unimplemented)
}


def from_status(code: grpc.StatusCode, message: str) -> GroveError:
    """The exception for a status code and message."""
    cls = _BY_CODE.get(code, GroveError)
    return cls(message, code=None if cls is not GroveError else code)


def from_rpc_error(error: grpc.RpcError) -> GroveError:
    """The exception for a grpc.RpcError raised by a stub."""
    return from_status_metadata(error.code(), error.details() or "",
                                dict(error.trailing_metadata() or ()))


def from_status_metadata(code: grpc.StatusCode, message: str,
                         meta: Mapping[str, Union[str, bytes]]) -> GroveError:
    """The exception for a status with its trailing metadata (a dict): a unary call's, or a
    Batch sub-request's status."""
    err = from_status(code, message)
    if isinstance(err, FailedPrecondition):
        if "grove-current-found" in meta:
            err.current_found = _text(meta["grove-current-found"]) == "1"
        if "grove-current-version" in meta:
            err.current_version = int(_text(meta["grove-current-version"]))
        if "grove-current-value-bin" in meta:
            v = meta["grove-current-value-bin"]
            err.current_value = v.encode() if isinstance(v, str) else bytes(v)
        if "grove-failed-mutation" in meta:
            err.failed_mutation = int(_text(meta["grove-failed-mutation"]))
    if isinstance(err, NotOwner):
        if "grove-map-version" in meta:
            err.map_version = int(_text(meta["grove-map-version"]))
    return err


def _text(v: Union[str, bytes, bytearray]) -> str:
    # Trailing metadata values are str, a sub-request status's are bytes.
    return v.decode() if isinstance(v, (bytes, bytearray)) else v
