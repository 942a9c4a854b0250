"""model.serving.cache.ByteLRU: bounded in bytes, least recently used out first, one computation per key,
thread-safe."""

from __future__ import annotations

import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch

from model.network.inference import AttentionResult
from model.serving.cache import BUDGET_ENV, DEFAULT_BUDGET_MB, MB, ByteLRU, budget_from_env, nbytes


def block(n_bytes: int, fill: float = 0.0) -> np.ndarray:
    return np.full(n_bytes // 4, fill, dtype=np.float32)


def test_evicts_by_bytes_in_least_recently_used_order():
    cache = ByteLRU(100)
    for key in "abc":
        assert cache.put(key, block(40))  # a, b fit; c pushes a out
    assert list(cache._entries) == ["b", "c"] and cache.nbytes == 80 and cache.evictions == 1
    assert cache.get("b") is not None  # b is now the most recently used ...
    cache.put("d", block(40))
    assert "c" not in cache and {"b", "d"} <= set(cache._entries)  # ... so c went, not b
    cache.put("big", block(96))  # one large value evicts as many as it needs
    assert list(cache._entries) == ["big"] and cache.nbytes == 96
    cache.put("small", block(4))
    assert cache.nbytes == 100 and len(cache) == 2  # exactly the budget is allowed


def test_a_value_larger_than_the_budget_is_returned_but_not_kept():
    cache = ByteLRU(100)
    cache.put("a", block(40))
    assert not cache.put("huge", block(400))
    assert "huge" not in cache and "a" in cache
    value = cache.get_or_compute("huge", lambda: block(400))
    assert value.nbytes == 400 and "huge" not in cache and cache.nbytes == 40


def test_replacing_a_key_counts_its_bytes_once():
    cache = ByteLRU(1000)
    cache.put("a", block(400))
    cache.put("a", block(100))
    assert cache.nbytes == 100 and len(cache) == 1


def test_nbytes_counts_arrays_and_text_of_a_result():
    s, t, shape = 3, 4, (2, 2)
    result = AttentionResult("Hi there", "Hallo", ["▁Hi", "▁there", "</s>"], ["<s>", "▁Hallo", "!", "</s>"],
                             np.zeros((*shape, s, s), np.float32), np.zeros((*shape, t, t), np.float32),
                             np.zeros((*shape, t, s), np.float32))
    arrays = 4 * 4 * (s * s + t * t + t * s)
    assert arrays <= nbytes(result) <= arrays + 200  # the maps, plus some tens of bytes of text
    assert nbytes({"a": block(40), "b": [block(8), "xy"]}) >= 50
    assert nbytes(torch.zeros(10)) == 40  # tensors count too


def test_budget_from_env():
    assert budget_from_env({}) == DEFAULT_BUDGET_MB * MB
    assert budget_from_env({BUDGET_ENV: "64"}) == 64 * MB
    assert budget_from_env({BUDGET_ENV: "0.5"}) == MB // 2
    assert budget_from_env({BUDGET_ENV: "0"}) == 0  # no cache: every value is computed each time
    for bad in ("abc", "-1", "nan"):
        with pytest.raises(ValueError, match=BUDGET_ENV):
            budget_from_env({BUDGET_ENV: bad})


def test_concurrent_callers_of_one_key_share_one_computation():
    cache = ByteLRU(MB)
    calls = []
    start = threading.Barrier(8)

    def compute():
        calls.append(1)
        time.sleep(0.05)  # the others arrive while this one runs
        return block(400)

    def ask(_):
        start.wait(timeout=10)
        return cache.get_or_compute("sentence", compute)

    with ThreadPoolExecutor(8) as pool:
        values = list(pool.map(ask, range(8)))
    assert len(calls) == 1 and all(v is values[0] for v in values)
    assert cache.misses == 1 and cache.hits == 7


def test_a_failed_computation_reaches_every_waiter_and_is_not_cached():
    cache = ByteLRU(MB)
    start = threading.Barrier(4)

    def compute():
        time.sleep(0.05)
        raise ValueError("The source sentence is empty")

    def ask(_):
        start.wait(timeout=10)
        with pytest.raises(ValueError, match="empty"):
            cache.get_or_compute("", compute)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(ask, range(4)))
    assert "" not in cache and not cache._pending
    assert cache.get_or_compute("", lambda: "now it works") == "now it works"


def test_thread_safe_under_concurrent_use():
    """Eight threads put, get and compute keys of random sizes: the books always balance and stay in budget."""
    budget = 10_000
    cache = ByteLRU(budget)
    errors = []

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        try:
            for _ in range(400):
                key = rng.randrange(40)
                size = 4 * rng.randrange(1, 800)
                op = rng.random()
                if op < 0.4:
                    cache.put(key, block(size, key))
                elif op < 0.8:
                    value = cache.get_or_compute(key, lambda k=key, n=size: block(n, k))
                    assert value[0] == key  # never another key's value
                else:
                    value = cache.get(key)
                    assert value is None or value[0] == key
                assert cache.nbytes <= budget
        except Exception as exc:  # noqa: BLE001 - collected and reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    assert cache.nbytes == sum(size for _, size in cache._entries.values()) <= budget
    assert cache.evictions > 0 and not cache._pending
