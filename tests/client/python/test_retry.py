"""The write-retry rule against a scripted server: a write is retried only when the server says
it was not applied; reads are retried on UNAVAILABLE."""

import pytest

import grove_client

from conftest import Scripted


@pytest.fixture
def serve(scripted):
    def start(servicer):
        return grove_client.Client(scripted(servicer), initial_backoff=0.01, max_backoff=0.05)
    return start


def test_a_write_refused_unapplied_is_retried(serve):
    s = Scripted(failures=2, not_applied=True)
    serve(s).put(b"k", b"v")
    assert s.calls["Put"] == 3


def test_a_write_that_may_have_been_applied_is_not_retried(serve):
    s = Scripted(failures=1, not_applied=False)
    with pytest.raises(grove_client.OutcomeUnknown) as e:
        serve(s).put(b"k", b"v")
    assert s.calls["Put"] == 1
    assert "may or may not have been applied" in e.value.message


def test_reads_are_retried_until_attempts_run_out(serve):
    s = Scripted(failures=2, not_applied=False)
    assert serve(s).get(b"k") == b"v"
    assert s.calls["Get"] == 3
    s = Scripted(failures=10, not_applied=False)
    with pytest.raises(grove_client.Unavailable):
        serve(s).get(b"k")
    assert s.calls["Get"] == 5, "max_attempts defaults to 5"
