"""grove_client.aio.AsyncClient against a real groved and a scripted server: the blocking
client's calls, answers, errors and retry rules as coroutines."""

import asyncio

import pytest

import grove_client
from grove_client import Delete, Put
from grove_client.aio import AsyncClient

from conftest import Scripted


def run(coro):
    return asyncio.run(coro)


def test_calls(shared_groved):
    async def body():
        async with AsyncClient(shared_groved.address) as c:
            assert await c.get(b"aio/absent") is None
            v1 = await c.put(b"aio/a", b"\x00one")
            assert await c.get_versioned(b"aio/a") == (b"\x00one", v1)
            info = await c.get_info(b"aio/a")
            assert (info.value, info.version, info.expires_at_ms) == (b"\x00one", v1, 0)
            await c.put(b"aio/gone", b"x")
            version = await c.batch_insert([Put(b"aio/b", b"two"), Delete(b"aio/gone"),
                                            Put(b"aio/c", b"three", ttl=3600)])
            assert await c.batch_get([b"aio/b", b"aio/gone", b"aio/c"]) == \
                [b"two", None, b"three"]
            assert (await c.get_versioned(b"aio/b"))[1] == version
            await c.delete(b"aio/b")
            assert await c.get(b"aio/b") is None
            assert await c.health() == "SERVING"
            assert (await c.stats()).variant == "btree"
    run(body())


def test_scan_pages_reverse_limit_and_delete_range(shared_groved):
    async def body():
        async with AsyncClient(shared_groved.address) as c:
            keys = [b"aioscan/%04d" % i for i in range(120)]
            await c.batch_insert([Put(k, b"v" + k) for k in keys])
            got = [kv async for kv in c.scan(b"aioscan/", b"aioscan0", page_size=7)]
            assert [k for k, _ in got] == keys and all(v == b"v" + k for k, v in got)
            assert [k async for k, _ in c.scan(b"aioscan/", b"aioscan0", reverse=True,
                                               page_size=11)] == keys[::-1]
            assert [k async for k, _ in c.scan(b"aioscan/", b"aioscan0", limit=25,
                                               page_size=10)] == keys[:25]
            r = await c.delete_range(b"aioscan/", b"aioscan0", limit=50)
            assert (r.deleted, r.more, r.resume_key) == (50, True, keys[50])
            assert await c.delete_range_all(r.resume_key, b"aioscan0", limit=30) == 70
            assert [kv async for kv in c.scan(b"aioscan/", b"aioscan0")] == []
    run(body())


def test_many_tasks_at_once_lose_nothing(shared_groved):
    # Compare-and-swap increments from concurrent tasks on one connection: every success counts.
    async def body():
        async with AsyncClient(shared_groved.address) as c:
            await c.put(b"aio/counter", b"0")

            async def bump(n):
                done = 0
                while done < n:
                    value, version = await c.get_versioned(b"aio/counter")
                    try:
                        await c.put(b"aio/counter", b"%d" % (int(value) + 1), if_version=version)
                        done += 1
                    except grove_client.FailedPrecondition as e:
                        assert e.current_version is not None and e.current_version > version
            await asyncio.gather(*(bump(10) for _ in range(8)))
            assert await c.get(b"aio/counter") == b"80"
    run(body())


def test_errors_are_typed_and_name_the_field(shared_groved):
    async def body():
        async with AsyncClient(shared_groved.address) as c:
            with pytest.raises(grove_client.InvalidArgument) as e:
                await c.get(b"")
            assert e.value.field == "key", e.value.message
            with pytest.raises(grove_client.InvalidArgument) as e:
                await c.batch_insert([Put(b"aio/ok", b"1"), Put(b"", b"2")])
            assert e.value.field == "mutations[1].key", e.value.message
            assert await c.get(b"aio/ok") is None, "a refused batch applies nothing"
            await c.put(b"aio/cas", b"one")
            with pytest.raises(grove_client.FailedPrecondition) as e:
                await c.put(b"aio/cas", b"two", if_value=b"other", return_current=True)
            assert (e.value.current_found, e.value.current_value) == (True, b"one")
            with pytest.raises(grove_client.InvalidArgument) as e:
                [kv async for kv in c.scan(b"b", b"a")]
            with pytest.raises(TypeError):
                await c.get(42)
            with pytest.raises(grove_client.InvalidArgument):
                await c.put(b"k", b"v", if_absent=True, if_version=3)
    run(body())


def test_the_write_retry_rule(scripted):
    async def body():
        s = Scripted(failures=2, not_applied=True)
        async with AsyncClient(scripted(s), initial_backoff=0.01, max_backoff=0.05) as c:
            assert await c.put(b"k", b"v") == 7
        assert s.calls["Put"] == 3, "a write refused unapplied is retried"

        s = Scripted(failures=1, not_applied=False)
        async with AsyncClient(scripted(s), initial_backoff=0.01) as c:
            with pytest.raises(grove_client.OutcomeUnknown) as e:
                await c.put(b"k", b"v")
        assert s.calls["Put"] == 1, "a write that may have been applied is not retried"
        assert "may or may not have been applied" in e.value.message

        s = Scripted(failures=2, not_applied=False)
        async with AsyncClient(scripted(s), initial_backoff=0.01) as c:
            assert await c.get(b"k") == b"v"
        assert s.calls["Get"] == 3, "reads are retried"
        s = Scripted(failures=10, not_applied=False)
        async with AsyncClient(scripted(s), initial_backoff=0.01, max_attempts=4) as c:
            with pytest.raises(grove_client.Unavailable):
                await c.get(b"k")
        assert s.calls["Get"] == 4
    run(body())


def test_writes_to_a_stopped_server_are_not_sent(make_groved):
    g = make_groved()

    async def body():
        async with AsyncClient(g.address, max_attempts=2, timeout=2,
                               connect_timeout=0.2) as c:
            await c.put(b"k", b"v")
            g.stop()
            with pytest.raises(grove_client.Unavailable) as e:
                await c.put(b"k", b"w")
            assert not isinstance(e.value, grove_client.OutcomeUnknown)
            assert "was not sent" in e.value.message
    run(body())


def test_bad_options_are_refused_naming_them():
    with pytest.raises(grove_client.InvalidArgument) as e:
        AsyncClient("127.0.0.1:1", timeout=0)
    assert e.value.field == "timeout"
    with pytest.raises(grove_client.InvalidArgument):
        AsyncClient("127.0.0.1:1", cert_file="c.pem")
    with pytest.raises(grove_client.InvalidArgument) as e:
        AsyncClient("etcd://127.0.0.1:2379/c")
    assert e.value.field == "address"


def test_trace(make_groved, work_dir):
    import os
    g = make_groved(f"trace:\n  dir: {os.path.join(work_dir, 'traces')}\n")

    async def body():
        async with AsyncClient(g.address) as c:
            assert (await c.trace_start(1.0, name="aio")).active
            await asyncio.gather(*(c.put(b"a%d" % i, b"v") for i in range(10)))
            st = await c.trace_stop()
            assert not st.active and st.records_written >= 10, st
            assert (await c.trace_status()).path.endswith("/aio.trace")
    run(body())
