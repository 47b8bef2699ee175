"""grove_client.Client with an etcd:// address: routing by the shard map against a real etcd and
two groved nodes (the C++ router's rules, docs/cluster.md "Routing").

The map: alpha owns [(start), g) and [p, (end)), beta owns [g, p).
"""

import os
import shutil
import subprocess
import time
import urllib.request

import pytest

import grove_client
from grove_client import Delete, Put

from conftest import Groved, free_port

ETCD = shutil.which("etcd", path="/usr/bin:/usr/local/bin")
pytestmark = pytest.mark.skipif(ETCD is None, reason="etcd not installed (etcd-server)")


class Etcd:
    def __init__(self, work):
        self.work = work
        self.port = free_port()
        peer = free_port()
        client = f"http://127.0.0.1:{self.port}"
        self.log = open(os.path.join(work, "etcd.log"), "ab")
        self.proc = subprocess.Popen(
            [ETCD, "--name=grove-py", f"--data-dir={os.path.join(work, 'etcd-data')}",
             f"--listen-client-urls={client}", f"--advertise-client-urls={client}",
             f"--listen-peer-urls=http://127.0.0.1:{peer}",
             f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
             f"--initial-cluster=grove-py=http://127.0.0.1:{peer}", "--log-level=warn"],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, "etcd exited"
            try:
                with urllib.request.urlopen(f"{client}/health", timeout=1) as r:
                    if b"true" in r.read():
                        return
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError("etcd did not become healthy")

    @property
    def endpoint(self):
        return f"127.0.0.1:{self.port}"

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.log.close()


def grovectl(etcd, *args):
    return subprocess.run([os.environ["GROVECTL"], "cluster", "--etcd", etcd.endpoint,
                           "--cluster", "r", *args], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    work = str(tmp_path_factory.mktemp("cluster"))
    etcd = Etcd(work)
    nodes = {}
    try:
        r = grovectl(etcd, "init", "--owner", "alpha", "--split", "g=beta", "--split", "p=alpha")
        assert r.returncode == 0, r.stderr
        for name in ("alpha", "beta"):
            d = os.path.join(work, name)
            os.makedirs(d)
            g = Groved(d)
            with open(g.config, "a") as f:
                f.write(f"cluster:\n  etcd_endpoints: [\"{etcd.endpoint}\"]\n  name: r\n"
                        f"  node_name: {name}\n  advertise_address: {g.address}\n"
                        "  lease_ttl_seconds: 2\n")
            g.start()
            nodes[name] = g
        yield etcd, nodes
    finally:
        for g in nodes.values():
            g.stop()
        etcd.stop()


@pytest.fixture
def routed(cluster):
    etcd, _ = cluster
    with grove_client.Client(f"etcd://{etcd.endpoint}/r", timeout=5) as c:
        yield c


def held_by(node, key):
    """Whether ``node`` itself holds ``key`` (a node refuses keys of ranges it does not own)."""
    with grove_client.Client(node.address, transport="unary") as c:
        try:
            return c.get(key) is not None
        except grove_client.NotOwner:
            return False


def test_calls_go_to_the_owner(cluster, routed):
    _, nodes = cluster
    for k in (b"a1", b"h1", b"q1"):
        routed.put(k, b"v" + k)
    assert routed.get(b"h1") == b"vh1"
    assert held_by(nodes["alpha"], b"a1") and held_by(nodes["alpha"], b"q1")
    assert held_by(nodes["beta"], b"h1") and not held_by(nodes["alpha"], b"h1")
    assert routed.batch_get([b"q1", b"nope", b"a1", b"h1"]) == [b"vq1", None, b"va1", b"vh1"]
    routed.delete(b"h1")
    assert routed.get(b"h1") is None
    v = routed.put(b"h2", b"one")
    with pytest.raises(grove_client.FailedPrecondition):
        routed.put(b"h2", b"two", if_version=v + 1)
    assert routed.get_versioned(b"h2") == (b"one", v)


def test_a_batch_is_atomic_within_one_range_only(routed):
    v = routed.batch_insert([Put(b"i1", b"1"), Put(b"i2", b"2"), Delete(b"i3")])
    assert routed.get_versioned(b"i2") == (b"2", v)
    with pytest.raises(grove_client.InvalidArgument) as e:
        routed.batch_insert([Put(b"b1", b"1"), Put(b"k1", b"2")])
    assert e.value.field == "mutations[1].key", e.value.message
    assert "[g, p)" in e.value.message and "[(start), g)" in e.value.message
    assert routed.get(b"b1") is None, "nothing of a refused batch applies"


def test_scans_and_deletes_cross_ranges(routed):
    routed.delete_range_all()  # the keys of the tests before
    assert list(routed.scan()) == []
    keys = [bytes([c]) + b"/%02d" % i for c in b"abfghopqz" for i in range(4)]
    for k in keys:
        routed.put(k, k)
    assert [k for k, _ in routed.scan(b"a/", b"{")] == keys
    assert [k for k, _ in routed.scan(b"a/", b"{", reverse=True, page_size=3)] == keys[::-1]
    assert [k for k, _ in routed.scan(b"f/", b"q", limit=9, page_size=2)] == \
        [k for k in keys if b"f/" <= k][:9]
    assert [k for k, _ in routed.scan(b"", b"p", reverse=True, limit=5)] == \
        [k for k in keys if k < b"p"][::-1][:5]
    r = routed.delete_range(b"b/", b"q/", limit=10)
    assert (r.deleted, r.more) == (10, True)
    assert routed.delete_range_all(r.resume_key, b"q/") == \
        len([k for k in keys if b"b/" <= k < b"q/"]) - 10
    assert [k for k, _ in routed.scan(b"a/", b"{")] == \
        [k for k in keys if k < b"b/" or k >= b"q/"]


def test_per_node_calls(cluster, routed):
    with pytest.raises(grove_client.FailedPrecondition) as e:
        routed.stats()
    assert "node_stats" in e.value.message
    with pytest.raises(grove_client.FailedPrecondition):
        routed.health()
    assert sorted(name for name, _ in routed.node_stats()) == ["alpha", "beta"]


def test_a_moved_range_is_followed(cluster):
    etcd, nodes = cluster
    with grove_client.Client(f"etcd://{etcd.endpoint}/r", timeout=5) as c:
        c.put(b"s1", b"before")   # the client now holds the map: [p, end) on alpha
        r = grovectl(etcd, "move", "p", "beta")
        assert r.returncode == 0, r.stderr
        # The stale view sends to alpha, which refuses (NotOwner); the client reads the map
        # again and resends to beta.
        assert c.get(b"s1") == b"before"
        c.put(b"s2", b"after")
        assert held_by(nodes["beta"], b"s2") and not held_by(nodes["alpha"], b"s2")
        assert [k for k, _ in c.scan(b"s", b"t")] == [b"s1", b"s2"]


def test_bad_addresses_are_refused_naming_the_address(cluster):
    etcd, _ = cluster
    for address in ("etcd://", "etcd:///r", f"etcd://{etcd.endpoint}/Bad Name",
                    "etcd://nohost/r"):
        with pytest.raises(grove_client.InvalidArgument) as e:
            grove_client.Client(address)
        assert e.value.field == "address", e.value.message
    with grove_client.Client(f"etcd://{etcd.endpoint}/other", timeout=2) as c:
        with pytest.raises(grove_client.FailedPrecondition) as e:
            c.get(b"k")
        assert "grovectl cluster init" in e.value.message
