"""The Batch stream transport: the same answers and exceptions as unary calls, many threads on one
stream, and a client that goes on after the server restarts."""

import threading
import urllib.request

import pytest

import grove_client


def metrics(groved):
    with urllib.request.urlopen(f"http://{groved.metrics}/metrics", timeout=10) as r:
        return r.read().decode()


def test_stream_and_unary_answer_alike(shared_groved):
    with grove_client.Client(shared_groved.address, transport="stream") as s, \
            grove_client.Client(shared_groved.address, transport="unary") as u:
        for c in (s, u):
            c.put(b"alike", b"v0")
            with pytest.raises(grove_client.FailedPrecondition) as e:
                c.put(b"alike", b"v1", if_absent=True, return_current=True)
            assert e.value.current_found
            assert e.value.current_value == b"v0"
            with pytest.raises(grove_client.InvalidArgument) as bad:
                c.put(b"", b"v")
            assert "key" in bad.value.message
            with pytest.raises(grove_client.FailedPrecondition) as batch:
                c.batch_insert([grove_client.Put(b"a1", b"x"),
                                grove_client.Put(b"alike", b"y", if_value=b"nope")])
            assert batch.value.failed_mutation == 1
            assert c.batch_get([b"alike", b"missing"]) == [b"v0", None]
            assert c.delete_range(b"alike", b"alikf").deleted == 1
        with pytest.raises(grove_client.ResourceExhausted) as su:
            s.get(b"k" * 1000)
        with pytest.raises(grove_client.ResourceExhausted) as uu:
            u.get(b"k" * 1000)
        assert su.value.message == uu.value.message


def test_many_threads_share_one_stream(make_groved):
    g = make_groved()
    errors = []
    with grove_client.Client(g.address) as c:
        def work(t):
            try:
                for i in range(100):
                    key = f"t{t}-{i}".encode()
                    c.put(key, key)
                    assert c.get(key) == key
            except Exception as e:  # reported below, with the thread's failure
                errors.append(e)
        threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    assert not errors
    m = metrics(g)
    assert ('grpc_server_started_total{grpc_method="Batch",grpc_service="grove.v1.KV",'
            'grpc_type="bidi_stream"} 1') in m
    assert ('grpc_server_handled_total{grpc_code="OK",grpc_method="Put",'
            'grpc_service="grove.v1.KV",grpc_type="batched"} 800') in m


def test_goes_on_after_the_server_restarts(make_groved):
    g = make_groved()
    with grove_client.Client(g.address, max_backoff=0.1, max_attempts=50) as c:
        c.put(b"before", b"1")
        g.stop()
        g.start()
        c.put(b"after", b"2")
        assert c.get(b"before") == b"1"
