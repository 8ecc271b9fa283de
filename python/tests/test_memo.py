"""fa_opt.memo.BoundedMemo: the launch path's bounded memo."""

import threading

import pytest

from fa_opt.memo import BoundedMemo


def test_oldest_dropped_first():
    memo = BoundedMemo(2)
    assert memo.put("a", 1) == 1
    memo.put("b", 2)
    memo.put("a", 10)  # a key already held: nothing dropped
    assert list(memo) == ["a", "b"] and memo.get("a") == 10
    memo.put("c", 3)
    assert list(memo) == ["b", "c"] and memo.get("a") is None
    assert memo.get("a", "missing") == "missing"
    memo.clear()
    assert len(memo) == 0 and list(memo) == []


def test_concurrent_puts_keep_the_limit():
    memo = BoundedMemo(8)
    errors = []

    def work(base):
        try:
            for i in range(5000):
                memo.put((base, i), i)
                memo.get((base, i - 1))
        except Exception as err:  # pragma: no cover - the failure reported
            errors.append(err)

    threads = [threading.Thread(target=work, args=(b,)) for b in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(memo) == 8


def test_get_or_make_keeps_none_and_skips_failures():
    memo = BoundedMemo(4)
    calls = []

    def make():
        calls.append(1)
        return None

    assert memo.get_or_make("a", make) is None
    assert memo.get_or_make("a", make) is None
    assert len(calls) == 1  # a stored None is a hit

    def fail():
        raise ValueError("bad")

    with pytest.raises(ValueError):
        memo.get_or_make("b", fail)
    assert "b" not in list(memo)
