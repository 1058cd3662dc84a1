"""hipdnn_ep_artifact_run_into: a program's outputs written straight into the host's memory (ABI 1.3).

Driven through the C ABI with ctypes, as a host such as the EP calls it: the host's allocator is
called once per output with the output's shape, and the program writes there; a program built
before 1.3 (it allocates its outputs itself) still runs, its outputs copied into the host's memory.
"""

from __future__ import annotations

import ctypes

import hipdnn_ep_runtime as rt
import numpy as np
import pytest
from conftest import ALLOC_FN, ArtifactFactory, MemoryStats, OutputAllocator, TensorRef

OK, INVALID_ARGUMENT, OUT_OF_MEMORY = 0, 1, 2


@pytest.fixture(scope="module")
def lib() -> ctypes.CDLL:
    lib = ctypes.CDLL(rt.library_path())
    lib.hipdnn_ep_last_error.restype = ctypes.c_char_p
    lib.hipdnn_ep_artifact_run_into.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(TensorRef),
                                                ctypes.POINTER(TensorRef), ctypes.POINTER(OutputAllocator)]
    for name in ("hipdnn_ep_artifact_open", "hipdnn_ep_state_create"):
        getattr(lib, name).argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.hipdnn_ep_artifact_close.argtypes = [ctypes.c_void_p]
    lib.hipdnn_ep_state_destroy.argtypes = [ctypes.c_void_p]
    lib.hipdnn_ep_synchronize.argtypes = [ctypes.c_void_p]
    lib.hipdnn_ep_memory_stats.argtypes = [ctypes.c_void_p, ctypes.POINTER(MemoryStats)]
    return lib


class Host:
    """An artifact and a CPU state opened through the C ABI, and a recording output allocator."""

    def __init__(self, lib: ctypes.CDLL, directory) -> None:
        self.lib = lib
        self.artifact, self.state = ctypes.c_void_p(), ctypes.c_void_p()
        assert lib.hipdnn_ep_artifact_open(str(directory).encode(), ctypes.byref(self.artifact)) == OK
        assert lib.hipdnn_ep_state_create(None, ctypes.byref(self.state)) == OK
        self.calls: list[tuple[int, tuple[int, ...], int, int]] = []
        self.buffers: list[np.ndarray] = []
        self.refuse = False
        self.callback = ALLOC_FN(self._alloc)  # kept alive as long as the host
        self.allocator = OutputAllocator(ctypes.sizeof(OutputAllocator), self.callback, None)

    def _alloc(self, context, index, output, size, out_data) -> int:
        ref = output.contents
        dims = tuple(ref.dims[d] for d in range(ref.rank))
        self.calls.append((index, dims, ref.dtype, size))
        if self.refuse:
            return OUT_OF_MEMORY
        buf = np.full(max(int(np.prod(dims)), 1), -1.0, dtype=np.float32)
        self.buffers.append(buf)
        out_data[0] = buf.ctypes.data
        return OK

    def run(self, n: int, allocator: OutputAllocator | None) -> tuple[int, TensorRef]:
        x, w = np.arange(n, dtype=np.float32), np.array([0.5], dtype=np.float32)
        self._keep = (x, w, (ctypes.c_int64 * 1)(n), (ctypes.c_int64 * 1)(1))
        inputs = (TensorRef * 2)(TensorRef(x.ctypes.data, self._keep[2], 1, 1),
                                 TensorRef(w.ctypes.data, self._keep[3], 1, 1))
        outputs = (TensorRef * 1)()
        rc = self.lib.hipdnn_ep_artifact_run_into(self.artifact, self.state, inputs, outputs,
                                                  ctypes.byref(allocator) if allocator is not None else None)
        return rc, outputs[0]

    def live_allocations(self) -> int:
        stats = MemoryStats(ctypes.sizeof(MemoryStats))
        assert self.lib.hipdnn_ep_memory_stats(self.state, ctypes.byref(stats)) == OK
        return stats.live_allocations

    def error(self) -> str:
        return self.lib.hipdnn_ep_last_error().decode()

    def close(self) -> None:
        self.lib.hipdnn_ep_artifact_close(self.artifact)
        assert self.lib.hipdnn_ep_state_destroy(self.state) == OK, self.error()


@pytest.fixture
def host(lib, make_artifact: ArtifactFactory):
    hosts = []

    def open_host(**kwargs) -> Host:
        hosts.append(Host(lib, make_artifact(**kwargs).directory))
        return hosts[-1]

    yield open_host
    for h in hosts:
        h.close()


def test_outputs_are_written_into_the_hosts_memory(host) -> None:
    h = host(in_place=True)
    for n in (4, 9):
        rc, out = h.run(n, h.allocator)
        assert rc == OK, h.error()
        buf = h.buffers[-1]
        assert out.data == buf.ctypes.data, "the output is the host's buffer, not a copy"
        np.testing.assert_array_equal(buf, 2 * np.arange(n, dtype=np.float32) + 0.5)
        assert (out.rank, out.dims[0], out.dtype) == (1, n, 1)
    # asked once per run, with the shape and byte size the program states before writing
    assert h.calls == [(0, (4,), 1, 16), (0, (9,), 1, 36)]
    assert h.live_allocations() == 0, "nothing of the runtime's own allocator holds an output"


def test_without_an_allocator_the_program_allocates_as_before(host, lib) -> None:
    h = host(in_place=True)
    rc, out = h.run(5, None)
    assert rc == OK, h.error()
    assert h.calls == [] and h.live_allocations() == 1
    y = np.ctypeslib.as_array(ctypes.cast(out.data, ctypes.POINTER(ctypes.c_float)), shape=(5,))
    np.testing.assert_array_equal(y, 2 * np.arange(5, dtype=np.float32) + 0.5)
    lib.hipdnn_ep_free.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    assert lib.hipdnn_ep_free(h.state, out.data) == OK
    assert h.live_allocations() == 0


def test_a_program_built_before_1_2_is_copied_into_the_hosts_memory(host) -> None:
    h = host(in_place=False)  # allocates its output with hipdnn_ep_malloc
    rc, out = h.run(6, h.allocator)
    assert rc == OK, h.error()
    assert h.calls == [(0, (6,), 1, 24)]
    assert out.data == h.buffers[-1].ctypes.data
    np.testing.assert_array_equal(h.buffers[-1], 2 * np.arange(6, dtype=np.float32) + 0.5)
    assert h.live_allocations() == 0, "the program's own output block is freed after the copy"


def test_a_refusing_allocator_fails_the_run_with_its_status(host) -> None:
    h = host(in_place=True)
    h.refuse = True
    rc, out = h.run(3, h.allocator)
    assert rc == OUT_OF_MEMORY
    assert "the host's output allocator failed for output 0 (status 2)" in h.error()
    assert h.live_allocations() == 0
    h.refuse = False
    assert h.run(3, h.allocator)[0] == OK, "the state is usable after a failed run"


def test_a_failing_program_does_not_free_the_hosts_memory(host) -> None:
    # The program fails after it got its output, then cleans up (frees it) as compiled programs do:
    # the runtime leaves the host's buffer alone, and the failure's own message survives.
    h = host(in_place=True, after_alloc="if (n == 3) { void* p; hipdnn_ep_malloc(state, 0, &p); "
                                         "hipdnn_ep_free(state, y); return HIPDNN_EP_STATUS_INVALID_ARGUMENT; }")
    rc, _ = h.run(3, h.allocator)
    assert rc == INVALID_ARGUMENT
    assert "hipdnn_ep_malloc" in h.error() and "NOT_FOUND" not in h.error() and "not allocated" not in h.error()
    assert h.live_allocations() == 0


def test_inputs_are_validated_before_the_program_runs(host) -> None:
    h = host(in_place=True)
    x = np.arange(4, dtype=np.float32)
    dims = (ctypes.c_int64 * 2)(2, 2)
    inputs = (TensorRef * 2)(TensorRef(x.ctypes.data, dims, 2, 1), TensorRef(x.ctypes.data, dims, 1, 1))
    outputs = (TensorRef * 1)()
    rc = h.lib.hipdnn_ep_artifact_run_into(h.artifact, h.state, inputs, outputs, ctypes.byref(h.allocator))
    assert rc == INVALID_ARGUMENT
    assert "hipdnn_ep_artifact_run_into: input 0 'x': rank 2 differs from the artifact's 1 [n]" in h.error()
    assert h.calls == []


def test_an_allocator_without_struct_size_is_refused(host) -> None:
    h = host(in_place=True)
    bad = OutputAllocator(0, h.callback, None)
    rc, _ = h.run(2, bad)
    assert rc == INVALID_ARGUMENT
    assert "set struct_size = sizeof(hipdnn_ep_output_allocator_t)" in h.error()
