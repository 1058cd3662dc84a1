"""The caching allocator's hold (a graph capture on a GPU): blocks the captured work frees stay the
graph's, and serve the capture's later allocations on the same stream, so a graph keeps its peak of
temporaries rather than their sum (an 8B-shaped prefill captured 41 dequantization temporaries of
32 MiB each, 1.3 GiB, where one was in use at a time).

The CPU backend never captures, so the allocator is built here alone (tests/cpp/allocator_driver.cpp,
over host memory) with the system C++ compiler; skipped without one.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import hipdnn_ep_runtime as rt
import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
DRIVER = Path(__file__).with_name("cpp") / "allocator_driver.cpp"
MiB = 1 << 20
STREAM, OTHER = 7, 8


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    cxx = shutil.which("c++") or shutil.which("g++")
    if cxx is None or not (SRC / "caching_allocator.cpp").is_file():
        pytest.skip("needs a C++ compiler and the runtime's sources")
    out = tmp_path_factory.mktemp("allocator") / "allocator_driver.so"
    subprocess.run([cxx, "-std=c++17", "-O1", "-shared", "-fPIC", f"-I{SRC}", f"-I{rt.include_dir()}",
                    str(SRC / "caching_allocator.cpp"), str(DRIVER), "-o", str(out)], check=True)
    lib = ctypes.CDLL(str(out))
    lib.driver_new.restype = ctypes.c_void_p
    lib.driver_delete.argtypes = [ctypes.c_void_p]
    lib.driver_allocate.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64, ctypes.POINTER(ctypes.c_void_p)]
    lib.driver_free.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint64]
    lib.driver_hold.argtypes = [ctypes.c_void_p, ctypes.c_int32]
    lib.driver_held.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.driver_held.restype = ctypes.c_uint64
    lib.driver_stats.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64)]
    lib.hipdnn_ep_last_error.restype = ctypes.c_char_p
    return lib


class Allocator:
    def __init__(self, lib: ctypes.CDLL) -> None:
        self.lib, self.d = lib, lib.driver_new()

    def malloc(self, size: int, stream: int = STREAM) -> int:
        p = ctypes.c_void_p()
        assert self.lib.driver_allocate(self.d, size, stream, ctypes.byref(p)) == 0, self.lib.hipdnn_ep_last_error()
        return p.value

    def free(self, ptr: int, stream: int = STREAM) -> int:
        return self.lib.driver_free(self.d, ptr, stream)

    def hold(self, on: bool) -> None:
        self.lib.driver_hold(self.d, int(on))

    def held(self) -> list[int]:
        n = self.lib.driver_held(self.d, None)
        out = (ctypes.c_void_p * n)()
        self.lib.driver_held(self.d, out)
        return [p for p in out]

    def stats(self) -> dict[str, int]:
        s = (ctypes.c_uint64 * 5)()
        self.lib.driver_stats(self.d, s)
        return dict(zip(("in_use", "reserved", "peak", "count", "live"), s, strict=True))

    def release_held(self) -> None:  # what destroying the graph does
        for p in self.held():
            assert self.free(p) == 0


@pytest.fixture
def alloc(lib: ctypes.CDLL) -> Iterator[Allocator]:
    a = Allocator(lib)
    yield a
    lib.driver_delete(a.d)  # gives every segment back


def test_a_capture_keeps_its_peak_of_temporaries_not_their_sum(alloc: Allocator) -> None:
    alloc.hold(True)
    temps = []
    for _ in range(41):  # one 32 MiB temporary at a time, as the prefill's dequantization chunks
        p = alloc.malloc(32 * MiB)
        temps.append(p)
        assert alloc.free(p) == 0
    alloc.hold(False)
    assert len(set(temps)) == 1, "a block freed during the capture serves its next allocation"
    assert alloc.held() == [temps[0]]  # still the graph's, freed once when it goes
    assert alloc.stats()["reserved"] == 32 * MiB
    assert alloc.stats()["in_use"] == 32 * MiB
    alloc.release_held()
    assert alloc.stats()["in_use"] == 0


def test_held_blocks_serve_only_their_stream_and_sizes_they_do_not_waste(alloc: Allocator) -> None:
    alloc.hold(True)
    big = alloc.malloc(8 * MiB)
    assert alloc.free(big) == 0
    assert alloc.malloc(8 * MiB, OTHER) != big      # freed on another stream
    small = alloc.malloc(1024)
    assert small != big                              # would waste more than the request again
    assert alloc.malloc(5 * MiB) == big              # fits, less than half wasted
    alloc.hold(False)


def test_a_live_block_is_never_handed_out_again(alloc: Allocator) -> None:
    alloc.hold(True)
    output = alloc.malloc(4 * MiB)                   # allocated during the capture, kept (an output)
    temp = alloc.malloc(4 * MiB)
    assert alloc.free(temp) == 0
    again = alloc.malloc(4 * MiB)
    assert again == temp and again != output
    assert alloc.malloc(4 * MiB) not in (output, temp)
    alloc.hold(False)


def test_double_free_during_a_capture_is_refused(alloc: Allocator) -> None:
    alloc.hold(True)
    p = alloc.malloc(1000)
    assert alloc.free(p) == 0
    assert alloc.free(p) != 0
    assert b"already freed" in alloc.lib.hipdnn_ep_last_error()
    q = alloc.malloc(1000)                           # p again, live: its free is taken once more
    assert q == p and alloc.free(q) == 0
    alloc.hold(False)
    assert alloc.held() == [p]


def test_blocks_freed_in_one_capture_do_not_serve_the_next(alloc: Allocator) -> None:
    alloc.hold(True)
    first = alloc.malloc(2 * MiB)
    assert alloc.free(first) == 0
    alloc.hold(False)
    alloc.hold(True)                                 # another graph: the first one still owns `first`
    assert alloc.malloc(2 * MiB) != first
    alloc.hold(False)
