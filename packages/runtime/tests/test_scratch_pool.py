"""Host scratch and pool: grow on demand, pointer stability, retirement until synchronize."""

from __future__ import annotations

import ctypes

import hipdnn_ep_runtime as rt
import pytest


@pytest.mark.parametrize("kind", ["host_scratch", "pool"])
def test_same_base_while_it_fits_new_base_on_growth(state: rt.State, kind: str) -> None:
    get = getattr(state, kind)
    base = get(64)
    assert base % 256 == 0
    assert get(64) == base
    assert get(1) == base
    assert get(256) == base  # the minimum capacity is one alignment unit
    ctypes.memmove(base, b"old contents", 12)
    grown = get(1000)
    assert grown != base
    # The retired block stays valid and unchanged until synchronize.
    assert ctypes.string_at(base, 12) == b"old contents"
    assert get(1000) == grown
    assert get(10) == grown  # never shrinks
    stats_key = "host_scratch_bytes" if kind == "host_scratch" else "pool_bytes"
    held = state.memory_stats()[stats_key]
    assert held >= 1000 + 256
    state.synchronize()
    after = state.memory_stats()[stats_key]
    assert after < held and after >= 1000  # only the current block is left
    assert get(1000) == grown


def test_growth_is_geometric(state: rt.State) -> None:
    state.host_scratch(1000)
    state.host_scratch(1001)
    # capacity at least doubled: 1500 still fits in the second block
    base = state.host_scratch(1500)
    assert state.host_scratch(2000) == base


def test_pool_counts_against_the_limit() -> None:
    with rt.State(memory_limit=1 << 20) as s:
        s.pool(512 << 10)
        assert s.memory_stats()["bytes_in_use"] >= 512 << 10
        with pytest.raises(rt.OutOfMemoryError, match="requested"):
            s.pool(800 << 10)  # the retired block still counts until synchronize
        s.synchronize()
        # after synchronize only the current block is held, but growing needs old + new at once
        with pytest.raises(rt.OutOfMemoryError):
            s.pool(800 << 10)


def test_pool_and_scratch_are_released_at_close_without_leak_report() -> None:
    s = rt.State()
    s.pool(10_000)
    s.host_scratch(10_000)
    s.pool(100_000)
    s.close()  # would raise LeakError if the pool's blocks were reported
