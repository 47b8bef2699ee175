"""Routing by a cluster's shard map: what grove_client.Client does with an address
"etcd://HOST:PORT[,HOST:PORT...][/CLUSTER]" (docs/cluster.md, "Routing"; the C++ client's
client/lib/router.h follows the same rules).

The router reads the shard map (/grove/<cluster>/shardmap, a grove.v1.ShardMap) and the members'
advertised addresses (/grove/<cluster>/nodes/<name>, grove.v1.NodeInfo) from etcd with
python-etcd3, keeps them, holds one unary Client per node, and sends each call to the owner of
its keys with the map version it routes by (grove-map-version). A node that does not own a key
answers OUT_OF_RANGE (NotOwner) before applying anything; the router then reads the view again
(once for all the threads that saw the same view refused) and resends, up to ROUTE_ATTEMPTS
times. Writes are otherwise retried by the node Client's own rules only.

Thread safety: every method may be called from any thread.
"""

from __future__ import annotations

import bisect
import re
import threading
import time
from dataclasses import dataclass, field
from typing import (TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Sequence,
                    Tuple, TypeVar)

from grove.v1 import cluster_pb2, kv_pb2

from . import _common, errors

if TYPE_CHECKING:
    from .client import Client

ROUTE_ATTEMPTS = 5
SCHEME = "etcd://"
_NAME = re.compile(r"^[a-z0-9_-]{1,63}$")
T = TypeVar("T")


@dataclass(frozen=True)
class Address:
    endpoints: List[Tuple[str, int]]
    cluster: str


def parse_address(address: str) -> Address:
    """Splits an etcd:// address; InvalidArgument naming ``address`` when it is malformed."""
    if not address.startswith(SCHEME):
        raise errors.InvalidArgument(f"address: not an etcd:// address: '{address}'")
    rest = address[len(SCHEME):]
    cluster = "default"
    if "/" in rest:
        rest, cluster = rest.split("/", 1)
    if not _NAME.match(cluster):
        raise errors.InvalidArgument(
            f"address: the cluster name: '{cluster}' is not 1..63 of a-z, 0-9, '_' and '-'")
    endpoints = []
    for part in filter(None, rest.split(",")):
        host, sep, port = part.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise errors.InvalidArgument(f"address: etcd endpoint '{part}' is not HOST:PORT")
        endpoints.append((host.strip("[]"), int(port)))
    if not endpoints:
        raise errors.InvalidArgument(
            "address: etcd://HOST:PORT[,HOST:PORT...][/CLUSTER] names no endpoint")
    return Address(endpoints, cluster)


@dataclass(frozen=True)
class View:
    """What the router knows of the cluster: the map's ranges (their starts in key order, for
    bisect) and the members' addresses."""

    version: int
    starts: List[bytes]
    ranges: List[cluster_pb2.ShardRange]
    addresses: Dict[str, str] = field(default_factory=dict)

    def index_of(self, key: bytes) -> int:
        return bisect.bisect_right(self.starts, key) - 1

    def find(self, key: bytes) -> cluster_pb2.ShardRange:
        return self.ranges[self.index_of(key)]


def describe(r: cluster_pb2.ShardRange) -> str:
    def show(k: bytes, end: bool) -> str:
        if not k:
            return "(end)" if end else "(start)"
        return "".join(chr(b) if 0x20 <= b < 0x7f else f"\\x{b:02x}" for b in k)
    return f"[{show(r.start, False)}, {show(r.end, True)})"


class _Etcd:
    """The etcd endpoints, tried in order until one answers."""

    def __init__(self, address: Address, timeout: float, ca_file: Optional[str],
                 cert_file: Optional[str], key_file: Optional[str]):
        try:
            import etcd3
        except ImportError:
            raise errors.FailedPrecondition(
                "address: etcd:// addresses need python-etcd3 (Debian: python3-etcd3; pip: "
                "etcd3)") from None
        if (cert_file is None) != (key_file is None):
            raise errors.InvalidArgument("etcd TLS options: etcd_cert_file and etcd_key_file "
                                         "must be given together")
        if cert_file is not None and ca_file is None:
            raise errors.InvalidArgument("etcd TLS options: a client certificate needs "
                                         "etcd_ca_file")
        self._clients = [etcd3.client(host=h, port=p, timeout=timeout, ca_cert=ca_file,
                                      cert_key=key_file, cert_cert=cert_file)
                         for h, p in address.endpoints]
        self._names = [f"{h}:{p}" for h, p in address.endpoints]

    def read(self, fn: Callable[[Any], T]) -> T:
        failures = []
        for name, c in zip(self._names, self._clients):
            try:
                return fn(c)
            except errors.GroveError:
                raise
            except Exception as e:  # python-etcd3 raises grpc errors and its own, unwrapped
                failures.append(f"{name}: {type(e).__name__} {e}".strip())
        raise errors.Unavailable("etcd: no endpoint answered (" + "; ".join(failures) + ")")

    def close(self) -> None:
        for c in self._clients:
            c.close()


class Router:
    def __init__(self, address: str, make_client: Callable[[str], Client], timeout: float,
                 etcd_ca_file: Optional[str], etcd_cert_file: Optional[str],
                 etcd_key_file: Optional[str]):
        parsed = parse_address(address)
        self._cluster = parsed.cluster
        self._prefix = f"/grove/{parsed.cluster}/"
        self._etcd = _Etcd(parsed, timeout, etcd_ca_file, etcd_cert_file, etcd_key_file)
        self._make_client = make_client
        self._lock = threading.Lock()          # guards _view and _clients
        self._refresh_lock = threading.Lock()  # one etcd read at a time
        self._view: Optional[View] = None
        self._clients: Dict[str, Client] = {}  # by node address

    def close(self) -> None:
        with self._lock:
            clients = list(self._clients.values())
            self._clients.clear()
        for c in clients:
            c.close()
        self._etcd.close()

    # The view.

    def current(self) -> View:
        with self._lock:
            if self._view is not None:
                return self._view
        self.refresh(None)
        with self._lock:
            assert self._view is not None
            return self._view

    def refresh(self, seen: Optional[View]) -> None:
        """Reads the view from etcd again, unless another thread did since ``seen``."""
        with self._refresh_lock:
            with self._lock:
                if self._view is not seen:
                    return
            view = self._etcd.read(self._read_view)
            with self._lock:
                if self._view is not None and self._view.version > view.version:
                    return
                self._view = view
                for c in self._clients.values():
                    c._map_version = view.version

    def _read_view(self, etcd: Any) -> View:
        raw, _ = etcd.get(self._prefix + "shardmap")
        if raw is None:
            raise errors.FailedPrecondition(
                f"cluster '{self._cluster}' has no shard map (grovectl cluster init)")
        m = cluster_pb2.ShardMap()
        try:
            m.ParseFromString(raw)
        except Exception:
            raise errors.DataLoss(f"{self._prefix}shardmap: does not parse") from None
        ranges = list(m.ranges)
        if not ranges or ranges[0].start != b"":
            raise errors.DataLoss(f"{self._prefix}shardmap: does not cover the key space")
        addresses = {}
        for value, meta in etcd.get_prefix(self._prefix + "nodes/"):
            info = cluster_pb2.NodeInfo()
            try:
                info.ParseFromString(value)
            except Exception:
                raise errors.DataLoss(
                    f"cluster: the record at '{meta.key.decode(errors='replace')}' does not "
                    "parse") from None
            addresses[info.name] = info.address
        return View(m.version, [r.start for r in ranges], ranges, addresses)

    def node(self, view: View, owner: str) -> Client:
        address = view.addresses.get(owner)
        if not address:
            raise errors.Unavailable(
                f"node '{owner}' owns a range but has never registered an address")
        with self._lock:
            c = self._clients.get(address)
            if c is None:
                c = self._make_client(address)
                c._map_version = view.version
                self._clients[address] = c
            return c

    # Calls.

    def for_key(self, key: bytes, call: Callable[[Client], T]) -> T:
        """call(owner of ``key``), rerouted on NotOwner."""
        last: Optional[errors.NotOwner] = None
        for attempt in range(ROUTE_ATTEMPTS):
            _pause(attempt - 1)
            view = self.current()
            try:
                return call(self.node(view, view.find(key).owner))
            except errors.NotOwner as e:
                last = e
            self.refresh(view)
        assert last is not None
        raise last

    def batch_get(self, keys: Sequence[bytes]) -> List[Optional[bytes]]:
        last: Optional[errors.NotOwner] = None
        for attempt in range(ROUTE_ATTEMPTS):
            _pause(attempt - 1)
            view = self.current()
            by_owner: Dict[str, List[int]] = {}
            for i, k in enumerate(keys):
                by_owner.setdefault(view.find(k).owner, []).append(i)
            values: List[Optional[bytes]] = [None] * len(keys)
            try:
                for owner, indexes in by_owner.items():
                    got = self.node(view, owner).batch_get([keys[i] for i in indexes])
                    for i, v in zip(indexes, got):
                        values[i] = v
                return values
            except errors.NotOwner as e:
                last = e
            self.refresh(view)
        assert last is not None
        raise last

    def batch_insert(self, req: kv_pb2.BatchInsertRequest,
                     call: Callable[[Client], T]) -> T:
        first = req.mutations[0].key if req.mutations else b""

        def checked(c: Client) -> T:
            view = self.current()
            home = view.index_of(first)
            for i, m in enumerate(req.mutations):
                if i and view.index_of(m.key) != home:
                    raise errors.InvalidArgument(
                        f"mutations[{i}].key: in shard range {describe(view.find(m.key))}, "
                        f"mutations[0].key in {describe(view.ranges[home])}: a BatchInsert is "
                        "atomic only within one range; send one batch per range (grovectl "
                        "cluster status lists them)")
            return call(c)
        return self.for_key(first, checked)

    def scan(self, req: kv_pb2.ScanRequest, limit: int,
             page_size: int) -> Iterator[Tuple[bytes, bytes]]:
        delivered = 0
        attempt = 0
        while True:
            view = self.current()
            i = len(view.ranges) - 1  # a reverse scan without an end starts in the last range
            if not req.reverse:
                i = view.index_of(req.start)
            elif req.end:
                i = view.index_of(req.end)
                if view.ranges[i].start == req.end and i > 0:
                    i -= 1
            c = self.node(view, view.ranges[i].owner)
            part = kv_pb2.ScanRequest()
            part.CopyFrom(req)
            stopped_at: List[bytes] = []
            last: Optional[bytes] = None
            try:
                for k, v in c._scan(part, 0 if limit == 0 else limit - delivered, page_size,
                                    stopped_at):
                    delivered += 1
                    last = k
                    yield k, v
            except errors.NotOwner:
                attempt += 1
                if attempt >= ROUTE_ATTEMPTS:
                    raise
                # Resume after what this node delivered before it refused (the range moved).
                _common.scan_resume(req, last)
                self.refresh(view)
                _pause(attempt - 1)
                continue
            if limit and delivered >= limit:
                return
            if not stopped_at:
                return  # the node's range held the rest
            attempt = 0
            if req.reverse:
                req.end = stopped_at[0]
            else:
                req.start = stopped_at[0]

    def delete_range(self, start: bytes, end: bytes, limit: int) -> _common.DeleteRangeResult:
        cursor = start
        deleted = 0
        version = 0
        attempt = 0
        while True:
            view = self.current()
            r = view.find(cursor)
            part_end, last_part = end, True
            if r.end and (not end or r.end < end):
                part_end, last_part = r.end, False
            c = self.node(view, r.owner)
            part_limit = 0 if limit == 0 else limit - min(limit, deleted)
            try:
                part = c.delete_range(cursor, part_end, limit=part_limit)
            except errors.NotOwner:
                attempt += 1
                if attempt >= ROUTE_ATTEMPTS:
                    raise
                self.refresh(view)
                _pause(attempt - 1)
                continue
            except errors.GroveError as e:
                # The parts before this one are gone: say where to go on.
                e.message += f" (keys before {cursor!r} were deleted; resume there)"
                raise
            attempt = 0
            deleted += part.deleted
            version = max(version, part.version)
            if part.more:
                return _common.DeleteRangeResult(deleted, True, part.resume_key, part.limited_by,
                                                 version)
            if last_part:
                return _common.DeleteRangeResult(deleted, False, b"", "", version)
            cursor = part_end
            if limit and deleted >= limit:
                return _common.DeleteRangeResult(deleted, True, cursor, "limit", version)

    def node_stats(self) -> List[Tuple[str, kv_pb2.StatsResponse]]:
        view = self.current()
        owners = sorted({r.owner for r in view.ranges})
        return [(o, self.node(view, o).stats()) for o in owners]


def per_node(call: str) -> errors.FailedPrecondition:
    return errors.FailedPrecondition(
        f"{call} is per node: call a node's own address (grovectl cluster status lists them)"
        + ("; node_stats() gives every node's" if call == "stats" else ""))


def _pause(attempt: int) -> None:
    """Waits a little before resending to a map that did not change (a switch in progress)."""
    if attempt > 0:
        time.sleep(0.02 * (1 << attempt))
