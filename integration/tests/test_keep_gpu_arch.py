"""tools/gpu/keep_gpu_arch.py: a library's CUDA code shrunk to the kept GPU architectures, in place (the same
size and layout), on a synthetic fatbin and, where nvcc is installed, on a library nvcc builds for two."""

from __future__ import annotations

import shutil
import struct
import subprocess
import sys

import pytest
from keep_gpu_arch import ENTRY, FATBIN_MAGIC, HEADER, fatbin_section, keep_arches, main


def _entry(arch: int, payload: bytes) -> bytes:
    header = bytearray(64)
    ENTRY.pack_into(header, 0, 2, 0x101, len(header), len(payload))
    struct.pack_into("<I", header, 28, arch)
    return bytes(header) + payload


def _fatbin(*entries: bytes) -> bytes:
    body = b"".join(entries)
    return HEADER.pack(FATBIN_MAGIC, 1, HEADER.size, len(body)) + body


def test_entries_of_other_architectures_are_zeroed_and_kept_ones_untouched():
    one = _fatbin(_entry(80, b"\x11" * 40), _entry(90, b"\x22" * 24))
    two = _fatbin(_entry(90, b"\x33" * 16), _entry(120, b"\x44" * 8))
    blob = bytearray(b"\x99" * 8 + one + bytes(8) + two)  # padding before and between fatbins
    per_arch = keep_arches(blob, 8, len(blob) - 8, {90})
    assert per_arch == {80: 40, 90: -40, 120: 8}
    assert b"\x11" not in blob and b"\x44" not in blob
    assert blob.count(b"\x22") == 24 and blob.count(b"\x33") == 16 and blob[:8] == b"\x99" * 8


def test_a_library_without_cuda_code_is_refused(tmp_path):
    library = tmp_path / "plain.so"
    shutil.copy(sys.executable, library)  # an ELF file with no .nv_fatbin section
    with pytest.raises(ValueError, match="no .nv_fatbin"):
        fatbin_section(library)
    assert main([str(library), "90"]) == 2


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_a_library_built_for_two_architectures_keeps_one(tmp_path):
    source = tmp_path / "k.cu"
    source.write_text("__global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n")
    library = tmp_path / "k.so"
    subprocess.run(["nvcc", "-shared", "-Xcompiler", "-fPIC", "-gencode", "arch=compute_80,code=sm_80", "-gencode",
                    "arch=compute_90,code=sm_90", str(source), "-o", str(library)], check=True, timeout=300)
    before = library.read_bytes()
    assert main([str(library), "70"]) == 2 and library.read_bytes() == before  # none kept: left as it was
    assert main([str(library), "90"]) == 0
    after = library.read_bytes()
    assert len(after) == len(before) and after != before
    start, size = fatbin_section(library)
    assert after[:start] == before[:start] and after[start + size:] == before[start + size:]
    assert keep_arches(bytearray(after), start, size, {90}).get(80, 0) > 0  # sm_80's entry is still listed
