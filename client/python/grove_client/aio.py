"""grove_client.aio.AsyncClient: the client for asyncio programs, on grpc.aio.

The same calls, answers, exceptions and retry rules as the blocking Client (grove_client.client),
as coroutines; ``scan`` is an async iterator. Calls are unary RPCs: grpc.aio carries any number of
them at once over one HTTP/2 connection, so concurrent tasks need no Batch stream to share it.

    import asyncio
    from grove_client.aio import AsyncClient

    async def main():
        async with AsyncClient("127.0.0.1:7400") as c:
            await c.put(b"greeting", b"hello")
            print(await c.get(b"greeting"))
            async for key, value in c.scan(b"a", b"z"):
                print(key, value)

    asyncio.run(main())
"""

from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator, Iterable, List, Optional, Tuple

import grpc
import grpc.aio

from grove.v1 import admin_pb2, admin_pb2_grpc, kv_pb2, kv_pb2_grpc
from grove_health import health_pb2, health_pb2_grpc

from . import _common, errors
from ._common import Bytes, DeleteRangeResult, Mutation, ValueInfo


class AsyncClient:
    """A connection to one groved for asyncio code: create and use it inside one event loop,
    and ``await close()`` (or use ``async with``) when done. Its options are the blocking
    Client's, without ``transport``."""

    def __init__(self, address: str = "127.0.0.1:7400", *, token: Optional[str] = None,
                 tls: bool = False, ca_file: Optional[str] = None,
                 cert_file: Optional[str] = None, key_file: Optional[str] = None,
                 server_name: Optional[str] = None, timeout: float = 10.0,
                 max_attempts: int = 5, initial_backoff: float = 0.05,
                 max_backoff: float = 2.0, connect_timeout: float = 1.0):
        self._s = _common.Settings.make(address, token, timeout, max_attempts, initial_backoff,
                                        max_backoff, connect_timeout)
        if address.startswith("etcd://"):
            raise errors.InvalidArgument(
                "address: AsyncClient connects to one node; route a cluster's etcd:// address "
                "with the blocking Client")
        self.address = address
        spec = _common.channel_spec(tls, ca_file, cert_file, key_file, server_name)
        if spec.credentials is not None:
            self._channel = grpc.aio.secure_channel(address, spec.credentials,
                                                    options=spec.options)
        else:
            self._channel = grpc.aio.insecure_channel(address, options=spec.options)
        self._kv = kv_pb2_grpc.KVStub(self._channel)
        self._admin = admin_pb2_grpc.AdminStub(self._channel)
        self._health = health_pb2_grpc.HealthStub(self._channel)

    async def close(self) -> None:
        """Closes the connection; calls in flight fail with CANCELLED."""
        await self._channel.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # Reads.

    async def get(self, key: Bytes) -> Optional[bytes]:
        """The value of ``key`` (bytes), or None when the key is absent."""
        return (await self.get_info(key)).value

    async def get_versioned(self, key: Bytes) -> Tuple[Optional[bytes], int]:
        """(value, version) of ``key``, or (None, 0) when absent."""
        info = await self.get_info(key)
        return info.value, info.version

    async def get_info(self, key: Bytes) -> ValueInfo:
        """A ValueInfo (value, version, expires_at_ms) of ``key``; value None when absent."""
        resp = await self._call(self._kv.Get, _common.get_request(key))
        return _common.value_info(resp)

    async def batch_get(self, keys: Iterable[Bytes]) -> List[Optional[bytes]]:
        """A list answering ``keys`` in order: each value, or None for an absent key."""
        resp = await self._call(self._kv.BatchGet, _common.batch_get_request(keys))
        return _common.batch_get_values(resp)

    def scan(self, start: Bytes = b"", end: Bytes = b"", *, limit: int = 0,
             reverse: bool = False, keys_only: bool = False,
             page_size: int = 10000) -> AsyncIterator[Tuple[bytes, bytes]]:
        """An async iterator of (key, value) pairs of [start, end), as Client.scan: paged,
        resumed after a broken stream, every key once and in order."""
        req = _common.scan_request(start, end, limit, page_size, reverse, keys_only)
        return self._scan(req, limit, page_size)

    async def stats(self) -> kv_pb2.StatsResponse:
        """The server's figures: a grove.v1.StatsResponse message."""
        resp: kv_pb2.StatsResponse = await self._call(self._kv.Stats, kv_pb2.StatsRequest())
        return resp

    async def health(self, service: str = "") -> str:
        """The serving status of ``service`` ("" = the whole server); not retried."""
        req = health_pb2.HealthCheckRequest(service=service)
        try:
            resp = await self._health.Check(req, timeout=self._s.timeout,
                                            metadata=self._s.metadata())
        except grpc.RpcError as e:
            raise await _error(e) from None
        return str(health_pb2.HealthCheckResponse.ServingStatus.Name(resp.status))

    # Writes: durable once they return.

    async def put(self, key: Bytes, value: Bytes, *, if_absent: bool = False,
                  if_value: Optional[Bytes] = None, if_version: Optional[int] = None,
                  ttl: Optional[float] = None, return_current: bool = False) -> int:
        """Sets ``key`` to ``value`` (with an optional condition or time to live, as
        Client.put) and returns the key's new version."""
        req = _common.put_request(key, value, if_absent=if_absent, if_value=if_value,
                                  if_version=if_version, ttl=ttl, return_current=return_current)
        return int((await self._call(self._kv.Put, req, write=True)).version)

    async def delete(self, key: Bytes, *, if_value: Optional[Bytes] = None,
                     if_version: Optional[int] = None, return_current: bool = False) -> None:
        """Removes ``key``; succeeds when the key is absent unless a condition is given."""
        req = _common.delete_request(key, if_value=if_value, if_version=if_version,
                                     return_current=return_current)
        await self._call(self._kv.Delete, req, write=True)

    async def batch_insert(self, mutations: Iterable[Mutation], *,
                           return_current: bool = False) -> int:
        """Applies Put and Delete mutations atomically and durably, in order; returns the
        version every key it put now has."""
        req = _common.batch_insert_request(mutations, return_current)
        return int((await self._call(self._kv.BatchInsert, req, write=True)).version)

    async def delete_range(self, start: Bytes = b"", end: Bytes = b"", *,
                           limit: int = 0) -> DeleteRangeResult:
        """Deletes the keys of [start, end) in one atomic call of at most ``limit`` keys."""
        req = _common.delete_range_request(start, end, limit)
        r = await self._call(self._kv.DeleteRange, req, write=True)
        return _common.delete_range_result(r)

    async def delete_range_all(self, start: Bytes = b"", end: Bytes = b"", *,
                               limit: int = 0) -> int:
        """Calls delete_range until no key of [start, end) is left; returns how many went."""
        deleted = 0
        while True:
            r = await self.delete_range(start, end, limit=limit)
            deleted += r.deleted
            if not r.more:
                return deleted
            start = r.resume_key

    async def backup(self, name: str = "", *, max_bytes_per_second: int = 0,
                     timeout: float = 3600.0) -> admin_pb2.BackupResponse:
        """An online backup on the server (admin role), as Client.backup."""
        req = admin_pb2.BackupRequest(name=name, max_bytes_per_second=max_bytes_per_second)
        resp: admin_pb2.BackupResponse = await self._call(self._admin.Backup, req, write=True,
                                                          timeout=timeout)
        return resp

    async def trace_start(self, sample: float = 0.01, *, duration: float = 0, name: str = "",
                          hash_keys: bool = False) -> admin_pb2.TraceStatusResponse:
        """Starts a sampled trace on the server, as Client.trace_start."""
        req = _common.start_trace_request(sample, duration, name, hash_keys)
        resp: admin_pb2.TraceStatusResponse = await self._call(self._admin.StartTrace, req,
                                                               write=True)
        return resp

    async def trace_stop(self) -> admin_pb2.TraceStatusResponse:
        """Ends the running trace, as Client.trace_stop."""
        resp: admin_pb2.TraceStatusResponse = await self._call(
            self._admin.StopTrace, admin_pb2.StopTraceRequest(), write=True)
        return resp

    async def trace_status(self) -> admin_pb2.TraceStatusResponse:
        """The running or last trace's status, as Client.trace_status."""
        resp: admin_pb2.TraceStatusResponse = await self._call(self._admin.GetTraceStatus,
                                                               admin_pb2.TraceStatusRequest())
        return resp

    # Plumbing.

    async def _connected(self) -> bool:
        try:
            await asyncio.wait_for(self._channel.channel_ready(), self._s.connect_wait())
            return True
        except asyncio.TimeoutError:
            return False

    async def _call(self, method: Any, req: Any, write: bool = False,
                    timeout: Optional[float] = None) -> Any:
        """Calls ``method`` with the blocking Client's retry rules."""
        timeout = timeout or self._s.timeout
        last: errors.GroveError = errors.Unavailable("no attempt made")
        for attempt in range(self._s.max_attempts):
            if attempt > 0:
                await asyncio.sleep(self._s.backoff(attempt - 1))
            if write and not await self._connected():
                last = errors.Unavailable(
                    f"no connection to {self.address} (server down or unreachable, or the TLS "
                    "handshake failed); the write was not sent")
                continue
            try:
                return await method(req, timeout=timeout, metadata=self._s.metadata())
            except grpc.RpcError as e:
                err = await _error(e)
                code = e.code()
                trailers = e.trailing_metadata()
                if asyncio.iscoroutine(trailers):
                    trailers = await trailers
                not_applied = _common.not_applied(trailers)
            if code != grpc.StatusCode.UNAVAILABLE:
                raise err from None
            if write and not not_applied:
                raise _common.outcome_unknown(err) from None
            last = err
        raise last

    async def _scan(self, req: kv_pb2.ScanRequest, limit: int,
                    page_size: int) -> AsyncIterator[Tuple[bytes, bytes]]:
        delivered = 0
        failures = 0
        while True:
            want = _common.scan_page_limit(limit, page_size, delivered)
            if want < 0:
                return
            req.limit = want
            call = self._kv.Scan(req, timeout=self._s.timeout, metadata=self._s.metadata())
            more = False
            last_key: Optional[bytes] = None
            try:
                async for msg in call:
                    for kv in msg.entries:
                        delivered += 1
                        yield kv.key, kv.value
                        if limit and delivered >= limit:
                            return
                    if msg.entries:
                        last_key = msg.last_key
                    more = msg.more
            except grpc.RpcError as e:
                if e.code() != grpc.StatusCode.UNAVAILABLE:
                    raise await _error(e) from None
                # Only consecutive attempts that delivered nothing count.
                failures = 1 if last_key is not None else failures + 1
                if failures >= self._s.max_attempts:
                    raise await _error(e) from None
                await asyncio.sleep(self._s.backoff(failures - 1))
                more = True
            finally:
                call.cancel()  # no-op once finished; frees the stream when the caller stops
            if not more:
                return
            _common.scan_resume(req, last_key)


async def _error(e: grpc.RpcError) -> errors.GroveError:
    """The typed exception for a grpc.aio error (whose trailing metadata may be awaitable)."""
    trailers = e.trailing_metadata()
    if asyncio.iscoroutine(trailers):
        trailers = await trailers
    # grpc.aio.Metadata iterates as (key, value) pairs, not as a mapping's keys.
    return errors.from_status_metadata(e.code(), e.details() or "", dict(tuple(trailers or ())))
