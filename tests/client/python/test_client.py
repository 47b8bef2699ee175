"""grove_client against a real groved: every call, typed errors, deadlines, scans that resume
after a broken stream, tokens and TLS."""

import os
import subprocess
import time

import grpc
import pytest
from grove.v1 import kv_pb2

import grove_client
from grove_client import Delete, Put


def test_put_get_delete(client):
    assert client.get(b"pgd/absent") is None
    client.put(b"pgd/a", b"\x00binary\xff")
    client.put("pgd/text", "caf\u00e9")  # str is UTF-8
    assert client.get(b"pgd/a") == b"\x00binary\xff"
    assert client.get("pgd/text") == "caf\u00e9".encode()
    client.put(b"pgd/empty", b"")
    assert client.get(b"pgd/empty") == b"", "an empty value is a value, not an absent key"
    client.delete(b"pgd/a")
    client.delete(b"pgd/never-there")  # deleting an absent key succeeds
    assert client.get(b"pgd/a") is None


def test_batch_insert_and_batch_get(client):
    client.put(b"batch/gone", b"x")
    version = client.batch_insert([Put(b"batch/1", b"one"), Put(b"batch/2", b"two"),
                                   Delete(b"batch/gone"), Put(b"batch/1", b"uno")])
    assert client.get_versioned(b"batch/2") == (b"two", version)
    assert client.batch_get([b"batch/1", b"batch/gone", b"batch/2", b"batch/1"]) == \
        [b"uno", None, b"two", b"uno"], "a later mutation of the same key wins"


def test_scan_forward_reverse_limit_and_pages(client):
    keys = [b"scan/%04d" % i for i in range(300)]
    client.batch_insert([Put(k, b"v" + k) for k in keys])
    got = list(client.scan(b"scan/", b"scan0", page_size=7))
    assert [k for k, _ in got] == keys, "pages of 7 cover the range once, in order"
    assert all(v == b"v" + k for k, v in got)
    assert [k for k, _ in client.scan(b"scan/", b"scan0", reverse=True, page_size=11)] == \
        keys[::-1]
    assert [k for k, _ in client.scan(b"scan/0100", b"scan/0110")] == keys[100:110]
    assert [k for k, _ in client.scan(b"scan/", b"scan0", limit=25, page_size=10)] == keys[:25]
    assert [k for k, _ in client.scan(b"scan/", b"scan0", reverse=True, limit=3)] == \
        keys[-1:-4:-1]
    assert all(v == b"" for _, v in client.scan(b"scan/", b"scan0", keys_only=True))
    it = client.scan(b"scan/", b"scan0", page_size=50)
    assert next(it)[0] == keys[0]
    it.close()  # stopping early cancels the stream
    assert client.get(keys[1]) == b"v" + keys[1]


def test_versions_and_compare_and_swap(client):
    v1 = client.put(b"cas/k", b"one")
    assert client.get_versioned(b"cas/k") == (b"one", v1)
    assert client.get_versioned(b"cas/absent") == (None, 0)
    v2 = client.put(b"cas/k", b"two", if_version=v1)
    assert v2 > v1
    with pytest.raises(grove_client.FailedPrecondition) as e:
        client.put(b"cas/k", b"three", if_version=v1)
    assert e.value.field == "precondition", e.value.message
    assert (e.value.current_found, e.value.current_version, e.value.current_value) == \
        (True, v2, None)
    with pytest.raises(grove_client.FailedPrecondition) as e:
        client.put(b"cas/k", b"three", if_absent=True, return_current=True)
    assert e.value.current_value == b"two"
    client.put(b"cas/k", b"three", if_value=b"two")
    with pytest.raises(grove_client.FailedPrecondition):
        client.delete(b"cas/k", if_value=b"two")
    client.delete(b"cas/k", if_value=b"three")
    assert client.get(b"cas/k") is None
    client.put(b"cas/k", b"again", if_absent=True)
    # A batch whose second mutation's precondition fails applies nothing.
    with pytest.raises(grove_client.FailedPrecondition) as e:
        client.batch_insert([Put(b"cas/new", b"x"), Put(b"cas/k", b"y", if_version=1)])
    assert e.value.failed_mutation == 1
    assert e.value.field == "mutations[1].precondition", e.value.message
    assert client.get(b"cas/new") is None
    with pytest.raises(grove_client.InvalidArgument):
        client.put(b"cas/k", b"z", if_absent=True, if_version=3)


def test_concurrent_compare_and_swap_increments_lose_nothing(shared_groved):
    import threading
    with grove_client.Client(shared_groved.address) as c:
        c.put(b"cas/counter", b"0")

        def work():
            with grove_client.Client(shared_groved.address) as mine:
                for _ in range(40):
                    while True:
                        value, version = mine.get_versioned(b"cas/counter")
                        try:
                            mine.put(b"cas/counter", b"%d" % (int(value) + 1), if_version=version)
                            break
                        except grove_client.FailedPrecondition:
                            continue

        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert c.get(b"cas/counter") == b"160"


def test_delete_range(client):
    client.batch_insert([Put(b"dr/%03d" % i, b"v") for i in range(50)])
    client.put(b"dr0", b"outside")
    r = client.delete_range(b"dr/010", b"dr/040", limit=12)
    assert (r.deleted, r.more, r.resume_key, r.limited_by) == (12, True, b"dr/022", "limit")
    assert r.version > 0
    assert client.delete_range_all(r.resume_key, b"dr/040", limit=7) == 18
    assert [k for k, _ in client.scan(b"dr/", b"dr0")] == \
        [b"dr/%03d" % i for i in list(range(10)) + list(range(40, 50))]
    assert client.delete_range_all(b"dr/", b"dr1") == 21, "the 20 left and dr0"
    with pytest.raises(grove_client.InvalidArgument) as e:
        client.delete_range(b"b", b"a")
    assert e.value.field == "end", e.value.message


def test_time_to_live(client):
    client.put(b"ttl/short", b"v", ttl=0.3)
    client.put(b"ttl/long", b"v", ttl=3600)
    client.batch_insert([Put(b"ttl/batch", b"v", ttl=0.3), Put(b"ttl/plain", b"v")])
    info = client.get_info(b"ttl/long")
    assert info.value == b"v" and info.version > 0
    assert 0 < info.expires_at_ms - int(time.time() * 1000) <= 3600 * 1000
    assert client.get_info(b"ttl/plain").expires_at_ms == 0
    time.sleep(0.5)
    assert client.get(b"ttl/short") is None
    assert client.batch_get([b"ttl/batch", b"ttl/plain"]) == [None, b"v"]
    assert [k for k, _ in client.scan(b"ttl/", b"ttl0")] == [b"ttl/long", b"ttl/plain"]
    assert client.stats().expiry.expired_reads >= 2
    with pytest.raises(grove_client.InvalidArgument):
        client.put(b"ttl/x", b"v", ttl=-1)
    with pytest.raises(grove_client.InvalidArgument):
        client.put(b"ttl/x", b"v", ttl=1e12)


def test_backup(make_groved, tmp_path):
    g = make_groved(extra_yaml=f"backup:\n  dir: {tmp_path}/backups\n")
    with grove_client.Client(g.address) as c:
        c.batch_insert([Put(b"bk/%02d" % i, b"v") for i in range(20)])
        r = c.backup("py-backup")
        assert r.path == f"{tmp_path}/backups/py-backup"
        assert r.last_lsn > 0 and r.data_bytes > 0
        assert os.path.exists(os.path.join(r.path, "BACKUP"))
        with pytest.raises(grove_client.FailedPrecondition) as e:
            c.backup("py-backup")
        assert e.value.field == "name", e.value.message
        with pytest.raises(grove_client.InvalidArgument):
            c.backup("a/b")


def test_errors_are_typed_and_name_the_field(client):
    with pytest.raises(grove_client.InvalidArgument) as e:
        client.get(b"")
    assert e.value.field == "key", e.value.message
    with pytest.raises(grove_client.ResourceExhausted) as e:
        client.put(b"k" * 5000, b"v")
    assert "limits.max_key_bytes" in e.value.message
    with pytest.raises(grove_client.InvalidArgument) as e:
        list(client.scan(b"b", b"a"))
    assert e.value.code.name == "INVALID_ARGUMENT"
    with pytest.raises(grove_client.InvalidArgument) as e:
        client.batch_insert([Put(b"ok", b"1"), Put(b"", b"2")])
    assert e.value.field == "mutations[1].key", e.value.message
    assert client.get(b"ok") is None, "a refused batch applies nothing"
    with pytest.raises(TypeError):
        client.get(42)
    with pytest.raises(TypeError):
        client.batch_insert([(b"k", b"v")])


def test_stats_and_health(client):
    client.put(b"stats/k", b"v")
    s = client.stats()
    assert s.variant == "btree"
    assert s.operations.puts >= 1
    assert s.cache.capacity_pages > 0
    assert client.health() == "SERVING"


def test_deadline():
    # A server whose Get never answers within the client's deadline.
    from concurrent import futures
    import threading
    from grove.v1 import kv_pb2_grpc

    release = threading.Event()

    class Stalled(kv_pb2_grpc.KVServicer):
        def Get(self, request, context):
            release.wait(10)
            return kv_pb2.GetResponse()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    kv_pb2_grpc.add_KVServicer_to_server(Stalled(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with grove_client.Client(f"127.0.0.1:{port}", timeout=0.3, max_attempts=3) as c:
            start = time.monotonic()
            with pytest.raises(grove_client.DeadlineExceeded):
                c.get(b"k")
            # Not retried: a deadline is the caller's budget, not a transient refusal.
            assert time.monotonic() - start < 2.0
    finally:
        release.set()
        server.stop(0)


def test_writes_to_a_stopped_server_are_not_sent(make_groved):
    g = make_groved()
    with grove_client.Client(g.address, max_attempts=2, timeout=2, connect_timeout=0.2) as c:
        c.put(b"k", b"v")
        g.stop()
        with pytest.raises(grove_client.Unavailable) as e:
            c.put(b"k", b"w")
        assert not isinstance(e.value, grove_client.OutcomeUnknown)
        assert "was not sent" in e.value.message
        with pytest.raises(grove_client.Unavailable):
            c.get(b"k")


def test_scan_resumes_after_a_broken_stream(make_groved):
    # One entry per stream message, so that the stream is still open when groved is killed.
    g = make_groved("limits:\n  scan_message_bytes: 1KiB\n")
    keys = [b"r/%05d" % i for i in range(8000)]
    with grove_client.Client(g.address, max_attempts=20, max_backoff=0.5) as c:
        for i in range(0, len(keys), 200):
            c.batch_insert([Put(k, b"%01000d" % j) for j, k in enumerate(keys[i:i + 200])])
        it = c.scan(b"r/", b"r0")
        got = [next(it)[0] for _ in range(100)]
        g.kill()
        g.start()
        got += [k for k, _ in it]
        assert got == keys, "each key once, in order, across the restart"
        assert c.stats().operations.scans >= 1, "the rest came from the restarted groved"


def test_tokens(make_groved, work_dir):
    tokens = os.path.join(work_dir, "tokens")
    with open(tokens, "w") as f:
        f.write("read  rrrrrrrrrrrrrrrrrrrrrrrr\nwrite wwwwwwwwwwwwwwwwwwwwwwww\n")
    g = make_groved(f"auth:\n  tokens_file: {tokens}\n")
    with grove_client.Client(g.address) as anonymous:
        with pytest.raises(grove_client.Unauthenticated):
            anonymous.get(b"k")
        assert anonymous.health() == "SERVING", "health needs no token"
    with grove_client.Client(g.address, token="rrrrrrrrrrrrrrrrrrrrrrrr") as reader:
        assert reader.get(b"k") is None
        with pytest.raises(grove_client.PermissionDenied):
            reader.put(b"k", b"v")
    with grove_client.Client(g.address, token="wwwwwwwwwwwwwwwwwwwwwwww") as writer:
        writer.put(b"k", b"v")
        assert writer.get(b"k") == b"v"


def test_tls_and_mutual_tls(make_groved, work_dir):
    certs = os.path.join(work_dir, "certs")
    os.makedirs(certs)
    subprocess.run(["bash", os.path.join(os.environ["GROVE_SOURCE_DIR"],
                                         "tests/service/gen_certs.sh"), certs], check=True)
    pem = lambda name: os.path.join(certs, name)  # noqa: E731
    tls = dict(tls=True, ca_file=pem("ca.pem"), cert_file=pem("client.pem"),
               key_file=pem("client.key"))
    g = make_groved(f"tls:\n  cert_file: {pem('server.pem')}\n  key_file: {pem('server.key')}\n"
                    f"  client_ca_file: {pem('ca.pem')}\n", **tls)
    with grove_client.Client(g.address, **tls) as c:
        c.put(b"tls", b"yes")
        assert c.get(b"tls") == b"yes"
    no_cert = dict(tls=True, ca_file=pem("ca.pem"))
    with grove_client.Client(g.address, max_attempts=1, timeout=2, **no_cert) as c:
        with pytest.raises(grove_client.Unavailable):
            c.get(b"tls")
    with grove_client.Client(g.address, max_attempts=1, timeout=2) as plaintext:
        with pytest.raises(grove_client.Unavailable):
            plaintext.get(b"tls")
    with pytest.raises(grove_client.InvalidArgument) as e:
        grove_client.Client(g.address, tls=True, ca_file=pem("missing.pem"))
    assert "ca_file" in e.value.message


def test_trace_start_stop_and_status(make_groved, work_dir):
    traces = os.path.join(work_dir, "traces")
    g = make_groved(f"trace:\n  dir: {traces}\n")
    with grove_client.Client(g.address) as c:
        with pytest.raises(grove_client.FailedPrecondition):
            c.trace_stop()  # none runs
        st = c.trace_start(1.0, name="py")
        assert st.active and st.path.endswith("/py.trace"), st
        for i in range(20):
            c.put(b"t%02d" % i, b"v")
            c.get(b"t%02d" % i)
        assert c.trace_status().active
        st = c.trace_stop()
        assert not st.active and st.ended_because == "stopped", st
        assert st.records_written >= 40, st
        assert os.path.getsize(st.path) > 0
        with pytest.raises(grove_client.InvalidArgument) as e:
            c.trace_start(2.0, name="bad-sample")
        assert e.value.field == "sample", e.value.message
        with pytest.raises(grove_client.InvalidArgument) as e:
            c.trace_start(0.5, name="../escape")
        assert e.value.field == "name", e.value.message
        with pytest.raises(grove_client.InvalidArgument) as e:
            c.trace_start(0.5, duration=-1)
        assert e.value.field == "duration", e.value.message
    with grove_client.Client(make_groved(sub="untraced").address) as c:
        with pytest.raises(grove_client.FailedPrecondition) as e:
            c.trace_start()
        assert "trace.dir" in e.value.message
