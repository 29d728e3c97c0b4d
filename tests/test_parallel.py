"""favmac.parallel: chunks on threads give the results of running them in order."""
import threading

import pytest

from favmac import parallel


def test_map_chunks_keeps_order_and_uses_threads():
    seen = set()

    def work(i):
        seen.add(threading.get_ident())
        return i * 3

    with parallel.using(2):
        assert parallel.map_chunks(work, range(50)) == [i * 3 for i in range(50)]
    assert parallel.map_chunks(work, range(5)) == [0, 3, 6, 9, 12]
    assert parallel.inner_threads() == 1


def test_nested_chunks_run_on_one_thread_and_errors_surface_after_every_chunk():
    done = []

    def inner(i):
        assert parallel.inner_threads() == 1  # no thread multiplication inside a chunk
        if i == 2:
            raise ValueError("chunk 2")
        done.append(i)
        return parallel.map_chunks(lambda x: x, [i, i])

    with parallel.using(2), pytest.raises(ValueError, match="chunk 2"):
        parallel.map_chunks(inner, range(6))
    assert sorted(done) == [0, 1, 3, 4, 5]


def test_using_is_restored_after_an_error():
    with pytest.raises(RuntimeError), parallel.using(4):
        raise RuntimeError
    assert parallel.inner_threads() == 1
