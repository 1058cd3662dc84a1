"""Caching allocator: allocation rules, statistics, limits, stream-ordered reuse, error paths."""

from __future__ import annotations

import ctypes
import re

import hipdnn_ep_runtime as rt
import numpy as np
import pytest
from conftest import MemoryStats

STATUS = rt.abi_manifest()["enums"][0]["values"]


def test_allocations_are_aligned_and_counted(state: rt.State) -> None:
    ptrs = [state.malloc(n) for n in (1, 255, 256, 257, 4096)]
    assert all(p % 256 == 0 for p in ptrs)
    stats = state.memory_stats()
    assert stats["live_allocations"] == 5
    assert stats["allocation_count"] == 5
    assert stats["bytes_in_use"] == 256 + 256 + 256 + 512 + 4096  # rounded to the alignment
    assert stats["bytes_reserved"] >= stats["bytes_in_use"]
    for p in ptrs:
        state.free(p)
    stats = state.memory_stats()
    assert stats["bytes_in_use"] == 0 and stats["live_allocations"] == 0
    assert stats["peak_bytes_in_use"] == 256 * 3 + 512 + 4096


def test_custom_alignment() -> None:
    with rt.State(alignment=4096) as s:
        ptrs = [s.malloc(10) for _ in range(3)]
        assert all(p % 4096 == 0 for p in ptrs)
        assert len(set(ptrs)) == 3
        for p in ptrs:
            s.free(p)


@pytest.mark.parametrize("alignment", [3, 8, 1 << 30])
def test_bad_alignment(alignment: int) -> None:
    with pytest.raises(rt.InvalidArgumentError, match="alignment"):
        rt.State(alignment=alignment)


def test_freed_block_is_reused(state: rt.State) -> None:
    p = state.malloc(1000)
    state.free(p)
    assert state.malloc(1000) == p
    state.free(p)
    assert state.memory_stats()["bytes_reserved"] == 2 << 20  # one segment served everything


def test_zero_size_is_invalid(state: rt.State) -> None:
    with pytest.raises(rt.InvalidArgumentError, match="size must be > 0"):
        state.malloc(0)


def test_double_free_and_foreign_pointer(state: rt.State) -> None:
    p = state.malloc(64)
    state.free(p)
    with pytest.raises(rt.NotFoundError, match="already freed"):
        state.free(p)
    with pytest.raises(rt.NotFoundError, match=hex(0x1234)):
        state.free(0x1234)
    buffer = ctypes.create_string_buffer(64)
    with pytest.raises(rt.NotFoundError):
        state.free(ctypes.addressof(buffer))
    state.free(0)  # NULL is a no-op


def test_pointer_of_another_state_is_foreign(state: rt.State) -> None:
    with rt.State() as other:
        p = other.malloc(64)
        with pytest.raises(rt.NotFoundError):
            state.free(p)
        other.free(p)


def test_limit_reports_requested_and_available_sizes() -> None:
    limit = 1 << 20
    with rt.State(memory_limit=limit) as s:
        p = s.malloc(600_000)
        with pytest.raises(rt.OutOfMemoryError) as err:
            s.malloc(600_000)
        message = str(err.value)
        assert "requested 600064 bytes" in message
        available = int(re.search(r"available (\d+) bytes", message).group(1))
        assert available == limit - s.memory_stats()["bytes_in_use"]
        assert "memory limit 1048576" in message
        assert s.memory_stats()["memory_limit_bytes"] == limit
        s.free(p)
        q = s.malloc(600_000)  # fits again once freed
        s.free(q)


def test_limit_releases_cache_before_failing() -> None:
    with rt.State(memory_limit=3 << 20) as s:
        s.set_stream(1)
        p = s.malloc(2 << 20)
        s.free(p)  # cached on stream 1 only
        s.set_stream(2)
        q = s.malloc(2 << 20)  # needs the cached memory: the allocator syncs and releases it
        assert s.memory_stats()["bytes_reserved"] <= 3 << 20
        s.free(q)


def test_empty_cache_returns_reserved_memory(state: rt.State) -> None:
    keep = state.malloc(100)
    p = state.malloc(5 << 20)  # its own segment (6 MiB)
    state.free(p)
    assert state.memory_stats()["bytes_reserved"] >= 5 << 20
    state.empty_cache()
    stats = state.memory_stats()
    assert stats["bytes_reserved"] == 2 << 20  # only the segment holding `keep`
    state.free(keep)
    state.empty_cache()
    assert state.memory_stats()["bytes_reserved"] == 0


def test_stream_ordered_reuse(state: rt.State) -> None:
    state.set_stream(1)
    p = state.malloc(256)
    state.free(p)
    state.set_stream(2)
    q = state.malloc(256)
    assert q != p, "a block freed on stream 1 must not be reused on stream 2 before synchronize"
    state.set_stream(1)
    assert state.malloc(256) == p, "reusable at once on the stream it was freed on"
    state.free(p)
    state.set_stream(2)
    state.free(q)
    state.synchronize()
    state.set_stream(3)
    r = state.malloc(256)
    assert r in (p, q), "after synchronize every stream reuses cached blocks"
    state.free(r)


def test_reserved_stream_id(state: rt.State) -> None:
    with pytest.raises(rt.InvalidArgumentError):
        state.set_stream(2**64 - 1)


def test_leak_report_at_close() -> None:
    s = rt.State()
    a = s.malloc(100)
    s.malloc(3000)
    s.free(a)
    with pytest.raises(rt.LeakError) as err:
        s.close()
    message = str(err.value)
    assert "1 device allocation(s) still live (3072 bytes)" in message
    assert "3000 bytes" in message
    assert s.closed
    s.close()  # closing again is a no-op
    with pytest.raises(rt.InvalidArgumentError, match="closed"):
        s.malloc(1)


def test_context_manager_reports_leak_but_not_over_another_error() -> None:
    with pytest.raises(rt.LeakError):
        with rt.State() as s:
            s.malloc(1)
    with pytest.raises(KeyError):
        with rt.State() as s:
            s.malloc(1)
            raise KeyError("original")


def test_unknown_and_unavailable_backends() -> None:
    with pytest.raises(rt.InvalidArgumentError, match="unknown backend 'tpu'"):
        rt.State(backend="tpu")
    for backend in ("cuda", "hip"):
        if backend in rt.built_backends():
            continue  # whether it works depends on the machine's GPU (tests/test_gpu_kernels.py)
        with pytest.raises(rt.BackendUnavailableError, match=f"without the {backend} backend.*HIPDNN_EP_BACKENDS"):
            rt.State(backend=backend)
    assert rt.built_backends()[0] == "cpu"
    with pytest.raises(rt.InvalidArgumentError, match="ordinal"):
        rt.State(device=1)
    assert issubclass(rt.BackendUnavailableError, RuntimeError)


def test_memcpy(state: rt.State) -> None:
    src = ctypes.create_string_buffer(b"hipdnn-ep", 16)
    p = state.malloc(16)
    state.memcpy(p, ctypes.addressof(src), 16, 1)
    dst = ctypes.create_string_buffer(16)
    state.memcpy(ctypes.addressof(dst), p, 16, 2)
    assert dst.value == b"hipdnn-ep"
    with pytest.raises(rt.InvalidArgumentError, match="unknown copy kind 9"):
        state.memcpy(ctypes.addressof(dst), p, 16, 9)
    with pytest.raises(rt.InvalidArgumentError, match="NULL"):
        state.memcpy(0, p, 16, 0)
    state.memcpy(0, 0, 0, 0)  # an empty copy is fine
    state.free(p)


# ---------------------------------------------------------------- C-level struct_size rules


class Options(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint64), ("backend", ctypes.c_int32), ("device_ordinal", ctypes.c_int32),
                ("memory_limit_bytes", ctypes.c_uint64), ("alignment", ctypes.c_uint64),
                ("graph_capture", ctypes.c_int32), ("graph_cache_size", ctypes.c_int32)]


def _create(lib: ctypes.CDLL, options: Options | None) -> tuple[int, ctypes.c_void_p]:
    out = ctypes.c_void_p()
    status = lib.hipdnn_ep_state_create(ctypes.byref(options) if options else None, ctypes.byref(out))
    return status, out


def _last_error(lib: ctypes.CDLL) -> str:
    lib.hipdnn_ep_last_error.restype = ctypes.c_char_p
    return lib.hipdnn_ep_last_error().decode()


def test_options_init_and_struct_size(runtime_lib: ctypes.CDLL) -> None:
    options = Options()
    runtime_lib.hipdnn_ep_state_options_init(ctypes.byref(options))
    assert (options.struct_size, options.backend, options.alignment) == (32, 0, 256)  # the ABI 1.0 fields

    bad = Options(struct_size=0, backend=0)
    status, _ = _create(runtime_lib, bad)
    assert status == STATUS["INVALID_ARGUMENT"]
    assert "struct_size is 0" in _last_error(runtime_lib)

    # An older caller whose struct ends before memory_limit_bytes: the runtime must not read past it.
    old = Options()
    runtime_lib.hipdnn_ep_state_options_init(ctypes.byref(old))
    old.struct_size = 16
    old.memory_limit_bytes = 12345  # beyond struct_size: ignored
    status, handle = _create(runtime_lib, old)
    assert status == STATUS["OK"]
    stats = MemoryStats(struct_size=ctypes.sizeof(MemoryStats))
    assert runtime_lib.hipdnn_ep_memory_stats(handle, ctypes.byref(stats)) == 0
    assert stats.memory_limit_bytes == 0
    assert runtime_lib.hipdnn_ep_state_destroy(handle) == 0


class GraphStats(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in ("struct_size", "captures", "replays", "uncaptured_runs",
                                              "graphs_cached", "evictions")] + [("last_uncaptured", ctypes.c_char_p)]


def test_graph_options_and_stats(runtime_lib: ctypes.CDLL) -> None:
    for field, value, text in (("graph_capture", 2, "graph_capture is 2"),
                               ("graph_cache_size", -1, "graph_cache_size -1 must be between 0")):
        bad = Options()
        runtime_lib.hipdnn_ep_state_options_init(ctypes.byref(bad))
        bad.struct_size, bad.graph_capture, bad.graph_cache_size = ctypes.sizeof(Options), 1, 0
        setattr(bad, field, value)
        assert _create(runtime_lib, bad)[0] == STATUS["INVALID_ARGUMENT"]
        assert text in _last_error(runtime_lib)
    # A caller built before ABI 1.3 (struct ends at alignment): the graph fields are not read.
    old = Options()
    runtime_lib.hipdnn_ep_state_options_init(ctypes.byref(old))
    old.struct_size, old.graph_capture = 32, 7
    status, handle = _create(runtime_lib, old)
    assert status == STATUS["OK"]
    stats = GraphStats(struct_size=ctypes.sizeof(GraphStats), captures=5)
    assert runtime_lib.hipdnn_ep_graph_stats(handle, ctypes.byref(stats)) == 0
    assert (stats.captures, stats.replays, stats.uncaptured_runs, stats.last_uncaptured) == (0, 0, 0, b"")
    short = GraphStats(struct_size=16, replays=9)  # covers captures only
    assert runtime_lib.hipdnn_ep_graph_stats(handle, ctypes.byref(short)) == 0 and short.replays == 9
    short.struct_size = 4
    assert runtime_lib.hipdnn_ep_graph_stats(handle, ctypes.byref(short)) == STATUS["INVALID_ARGUMENT"]
    assert runtime_lib.hipdnn_ep_state_destroy(handle) == 0


def test_options_init_writes_nothing_past_an_older_callers_struct(runtime_lib: ctypes.CDLL) -> None:
    """A caller built for ABI 1.0 to 1.2 hands init a 32-byte struct (and no size). Writing the fields ABI 1.3
    appended overwrote what followed it, and released EPs crashed in session creation (the matrix's cells of
    hipdnn-ep 0.1.0 and 0.2.0 on runtime 1.3)."""
    buffer = (ctypes.c_uint8 * 48)(*([0xAB] * 48))
    runtime_lib.hipdnn_ep_state_options_init(buffer)
    assert bytes(buffer[32:]) == b"\xab" * 16, "init wrote past the ABI 1.0 fields"
    old = Options.from_buffer(buffer)
    assert (old.struct_size, old.backend, old.alignment) == (32, 0, 256)
    # what an older caller then creates has the later fields' defaults: graph capture on, 8 graphs held
    old.graph_capture = old.graph_cache_size = -5  # its memory past the struct: never read
    status, handle = _create(runtime_lib, old)
    assert status == STATUS["OK"], _last_error(runtime_lib)
    assert runtime_lib.hipdnn_ep_state_destroy(handle) == 0


def test_null_options_means_defaults(runtime_lib: ctypes.CDLL) -> None:
    status, handle = _create(runtime_lib, None)
    assert status == 0 and handle.value
    assert runtime_lib.hipdnn_ep_state_destroy(handle) == 0


def test_stats_struct_size_limits_what_is_written(runtime_lib: ctypes.CDLL) -> None:
    status, handle = _create(runtime_lib, None)
    ptr = ctypes.c_void_p()
    assert runtime_lib.hipdnn_ep_malloc(handle, ctypes.c_uint64(10), ctypes.byref(ptr)) == 0
    stats = MemoryStats(struct_size=8 + 8 * 2)  # covers bytes_in_use and bytes_reserved only
    stats.peak_bytes_in_use = 777
    assert runtime_lib.hipdnn_ep_memory_stats(handle, ctypes.byref(stats)) == 0
    assert stats.bytes_in_use == 256 and stats.peak_bytes_in_use == 777
    stats.struct_size = 4
    assert runtime_lib.hipdnn_ep_memory_stats(handle, ctypes.byref(stats)) == STATUS["INVALID_ARGUMENT"]
    assert runtime_lib.hipdnn_ep_free(handle, ptr) == 0
    assert runtime_lib.hipdnn_ep_state_destroy(handle) == 0


def test_null_arguments_are_rejected(runtime_lib: ctypes.CDLL) -> None:
    ptr = ctypes.c_void_p()
    assert runtime_lib.hipdnn_ep_malloc(None, ctypes.c_uint64(8), ctypes.byref(ptr)) == STATUS["INVALID_ARGUMENT"]
    assert "must not be NULL" in _last_error(runtime_lib)
    assert runtime_lib.hipdnn_ep_state_create(None, None) == STATUS["INVALID_ARGUMENT"]
    assert runtime_lib.hipdnn_ep_state_destroy(None) == 0


def test_view_shares_state_memory_through_dlpack(state: rt.State) -> None:
    """A DLPack view of runtime memory is zero-copy: numpy sees what memcpy writes, also afterwards."""
    data = np.arange(12, dtype=np.float32)
    ptr = state.malloc(data.nbytes)
    state.memcpy(ptr, data.ctypes.data, data.nbytes, 0)
    view = np.from_dlpack(state.view(ptr, [3, 4], "float32"))
    assert view.shape == (3, 4) and view.dtype == np.float32
    assert view.ctypes.data == ptr
    np.testing.assert_array_equal(view.ravel(), data)
    later = np.full(12, 42.0, np.float32)
    state.memcpy(ptr, later.ctypes.data, later.nbytes, 0)
    assert view[0, 0] == 42.0  # the same memory, not a copy
    with pytest.raises(rt.InvalidArgumentError, match="unknown dtype 'float8'"):
        state.view(ptr, [1], "float8")
    del view
    state.free(ptr)


def test_device_memory_stats_add_up_every_state_of_the_device() -> None:
    """The process-wide figures count the blocks and segments of all states on a device at once, so their
    peak is the most held at one time (per-state peaks, reached at different times, cannot give it)."""
    before = rt.device_memory_stats("cpu")
    with rt.State() as a, rt.State() as b:
        during = rt.device_memory_stats("cpu")
        assert during["states"] == before["states"] + 2
        pa = a.malloc(3 << 20)
        pb = b.malloc(5 << 20)
        both = rt.device_memory_stats("cpu")
        assert both["bytes_in_use"] == before["bytes_in_use"] + (8 << 20)
        reserved = a.memory_stats()["bytes_reserved"] + b.memory_stats()["bytes_reserved"]
        assert both["bytes_reserved"] == before["bytes_reserved"] + reserved
        assert both["peak_bytes_in_use"] >= both["bytes_in_use"]
        assert both["peak_bytes_reserved"] >= both["bytes_reserved"]
        a.free(pa)
        b.free(pb)
        assert rt.device_memory_stats("cpu")["bytes_in_use"] == before["bytes_in_use"]
    after = rt.device_memory_stats("cpu")
    assert (after["bytes_in_use"], after["bytes_reserved"], after["states"]) == (
        before["bytes_in_use"], before["bytes_reserved"], before["states"])
    assert after["peak_bytes_in_use"] >= before["bytes_in_use"] + (8 << 20)
    assert rt.device_memory_stats("cpu", device=7) == dict.fromkeys(after, 0)  # a device no state used


def test_device_memory_stats_refuse_bad_arguments() -> None:
    with pytest.raises(rt.InvalidArgumentError, match="unknown backend 'gpu'"):
        rt.device_memory_stats("gpu")
    with pytest.raises(rt.InvalidArgumentError, match="device_ordinal is -1"):
        rt.device_memory_stats("cpu", device=-1)


class DeviceMemoryStats(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in ("struct_size", "bytes_in_use", "peak_bytes_in_use", "bytes_reserved",
                                              "peak_bytes_reserved", "states")]


def test_device_memory_stats_c_entry_point(runtime_lib: ctypes.CDLL) -> None:
    fn = runtime_lib.hipdnn_ep_device_memory_stats
    with rt.State() as s:
        p = s.malloc(1 << 20)
        full = DeviceMemoryStats(struct_size=ctypes.sizeof(DeviceMemoryStats))
        assert fn(0, 0, ctypes.byref(full)) == STATUS["OK"]
        assert full.states >= 1 and full.bytes_in_use >= 1 << 20 and full.peak_bytes_reserved >= full.bytes_reserved
        short = DeviceMemoryStats(struct_size=16, peak_bytes_in_use=123)  # covers bytes_in_use only
        assert fn(0, 0, ctypes.byref(short)) == STATUS["OK"]
        assert short.bytes_in_use == full.bytes_in_use and short.peak_bytes_in_use == 123
        s.free(p)
    short.struct_size = 4
    assert fn(0, 0, ctypes.byref(short)) == STATUS["INVALID_ARGUMENT"]
    assert "struct_size is 4" in _last_error(runtime_lib)
    assert fn(9, 0, ctypes.byref(full)) == STATUS["INVALID_ARGUMENT"]
    assert "backend 9 is not a hipdnn_ep_backend value" in _last_error(runtime_lib)
    assert fn(0, 0, None) == STATUS["INVALID_ARGUMENT"]
