"""Randomized stress of the allocator and concurrent use from threads."""

from __future__ import annotations

import ctypes
import random
import threading

import hipdnn_ep_runtime as rt
import pytest


def _check_invariants(state: rt.State, live: dict[int, tuple[int, int]], alignment: int) -> None:
    spans = sorted((p, p + size) for p, (size, _) in live.items())
    for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
        assert end <= start, "live blocks overlap"
    stats = state.memory_stats()
    assert stats["live_allocations"] == len(live)
    rounded = sum(-(-size // alignment) * alignment for size, _ in live.values())
    assert stats["bytes_in_use"] == rounded
    assert stats["bytes_in_use"] <= stats["bytes_reserved"]
    assert stats["bytes_in_use"] <= stats["peak_bytes_in_use"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_randomized_alloc_free(seed: int) -> None:
    rng = random.Random(seed)
    alignment = rng.choice([256, 512, 4096])
    limit = 64 << 20
    state = rt.State(memory_limit=limit, alignment=alignment)
    live: dict[int, tuple[int, int]] = {}  # ptr -> (size, fill byte)
    count = 0
    for step in range(3000):
        op = rng.random()
        if op < 0.55 or not live:
            size = rng.choice([rng.randint(1, 512), rng.randint(1, 64 << 10), rng.randint(1, 3 << 20)])
            try:
                p = state.malloc(size)
            except rt.OutOfMemoryError as err:
                assert "requested" in str(err) and "available" in str(err)
                continue
            count += 1
            assert p % alignment == 0
            fill = rng.randrange(256)
            ctypes.memset(p, fill, size)
            live[p] = (size, fill)
        elif op < 0.95:
            p = rng.choice(list(live))
            size, fill = live.pop(p)
            data = ctypes.string_at(p, size)
            assert data == bytes([fill]) * size, "a live block was overwritten"
            state.free(p)
        elif op < 0.98:
            state.set_stream(rng.randrange(4))
        else:
            state.synchronize() if rng.random() < 0.7 else state.empty_cache()
        if step % 100 == 0:
            _check_invariants(state, live, alignment)
        assert state.memory_stats()["bytes_reserved"] <= limit
    _check_invariants(state, live, alignment)
    assert state.memory_stats()["allocation_count"] == count
    leaked = len(live)
    if leaked:
        with pytest.raises(rt.LeakError, match=f"{leaked} device allocation"):
            state.close()
    else:
        state.close()


def test_everything_returned_at_the_end() -> None:
    with rt.State() as state:
        ptrs = [state.malloc(n) for n in range(1, 2000, 7)]
        for p in ptrs:
            state.free(p)
        state.empty_cache()
        stats = state.memory_stats()
        assert (stats["bytes_in_use"], stats["bytes_reserved"], stats["live_allocations"]) == (0, 0, 0)


def test_concurrent_malloc_free_from_threads() -> None:
    state = rt.State()
    threads_n, rounds = 4, 400
    errors: list[BaseException] = []
    mallocs = [0] * threads_n
    start = threading.Barrier(threads_n)

    def worker(index: int) -> None:
        rng = random.Random(index)
        mine: dict[int, int] = {}
        try:
            start.wait()
            for _ in range(rounds):
                if rng.random() < 0.6 or not mine:
                    size = rng.randint(1, 20_000)
                    p = state.malloc(size)
                    ctypes.memset(p, index + 1, size)
                    mine[p] = size
                    mallocs[index] += 1
                else:
                    p = rng.choice(list(mine))
                    size = mine.pop(p)
                    assert ctypes.string_at(p, size) == bytes([index + 1]) * size
                    state.free(p)
                state.memory_stats()
            for p in list(mine):
                state.free(p)
        except BaseException as err:  # noqa: BLE001 - reported by the main thread
            errors.append(err)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(threads_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    stats = state.memory_stats()
    assert stats["live_allocations"] == 0 and stats["bytes_in_use"] == 0
    assert stats["allocation_count"] == sum(mallocs)
    state.close()
