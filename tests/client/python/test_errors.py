"""grove_client's typed errors from statuses and trailing metadata (no server needed)."""
import grpc

import grove_client
from grove_client import errors


class FakeRpcError(grpc.RpcError):
    def __init__(self, code, details, trailers):
        super().__init__()
        self._code, self._details, self._trailers = code, details, trailers

    def code(self):
        return self._code

    def details(self):
        return self._details

    def trailing_metadata(self):
        return self._trailers


def test_not_owner_carries_the_map_version():
    err = errors.from_rpc_error(FakeRpcError(
        grpc.StatusCode.OUT_OF_RANGE, "not owner: key 'k' is in range [g, m) owned by node 'b'",
        (("grove-not-owner", "1"), ("grove-map-version", "7"))))
    assert isinstance(err, grove_client.NotOwner)
    assert err.map_version == 7
    assert "owned by node 'b'" in str(err)


def test_an_unknown_code_is_a_plain_grove_error():
    err = errors.from_status(grpc.StatusCode.ABORTED, "aborted")
    assert type(err) is grove_client.GroveError
