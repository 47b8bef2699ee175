"""Python client for Grove's gRPC API (grove.v1.KV). See client/python/README.md.

    from grove_client import Client, Put, Delete

    with Client("127.0.0.1:7400") as c:
        c.put(b"greeting", b"hello, grove")
        print(c.get(b"greeting"))
        c.batch_insert([Put(b"a", b"1"), Delete(b"b")])
        for key, value in c.scan(b"a", b"z"):
            print(key, value)
"""

from ._common import Delete, DeleteRangeResult, Put, ValueInfo
from .client import Client
from .errors import (AlreadyExists, Cancelled, DataLoss, DeadlineExceeded, FailedPrecondition,
                     GroveError, Internal, InvalidArgument, NotFound, NotOwner, OutcomeUnknown,
                     PermissionDenied, ResourceExhausted, Unauthenticated, Unavailable,
                     Unimplemented)

__all__ = [
    "Client", "Put", "Delete", "DeleteRangeResult", "ValueInfo", "GroveError", "InvalidArgument", "NotFound", "AlreadyExists",
    "FailedPrecondition", "ResourceExhausted", "Unavailable", "OutcomeUnknown",
    "DeadlineExceeded", "DataLoss", "Unauthenticated", "PermissionDenied", "Cancelled",
    "Internal", "Unimplemented", "NotOwner",
]
