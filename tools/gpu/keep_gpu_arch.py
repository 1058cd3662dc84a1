#!/usr/bin/env python3
"""Shrinks a shared library's embedded CUDA code to the GPU architectures a machine has, for transfer.

A library built for many GPUs (onnxruntime-gpu's CUDA provider: sm_75 to sm_120, 209 MiB of code) carries
one cubin per architecture in its `.nv_fatbin` section. This zeroes the payload of every entry whose
architecture is not kept, in place: the file keeps its size and layout (nothing is moved, so every offset
and symbol stays valid), and the zeros compress to nothing. The CUDA runtime loads the entry matching the
GPU it runs on, so on a kept architecture the library runs as before; on another it fails to load its
kernels (do not install the result anywhere else).

    python tools/gpu/keep_gpu_arch.py LIBRARY 90 [ARCH...]

Prints what it zeroed. Exits 2 when the library has no fatbin or none of the kept architectures.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

FATBIN_MAGIC = 0xBA55ED50
HEADER = struct.Struct("<IHHQ")  # magic, version, header size, size of the entries that follow
ENTRY = struct.Struct("<HHII")  # kind, version, header size, padded payload size
ENTRY_ARCH_OFFSET = 28  # the entry header's uint32 sm version (75, 80, 90...)


def fatbin_section(path: Path) -> tuple[int, int]:
    """(file offset, size) of the ELF64 file's .nv_fatbin section, from its section headers."""
    data = path.read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise ValueError(f"{path} is not a 64-bit ELF file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    names_off, = struct.unpack_from("<Q", data, shoff + shstrndx * shentsize + 0x18)
    for i in range(shnum):
        base = shoff + i * shentsize
        name_index, = struct.unpack_from("<I", data, base)
        end = data.index(b"\0", names_off + name_index)
        if data[names_off + name_index:end] == b".nv_fatbin":
            offset, size = struct.unpack_from("<QQ", data, base + 0x18)
            return offset, size
    raise ValueError(f"{path} has no .nv_fatbin section")


def keep_arches(data: bytearray, start: int, size: int, keep: set[int]) -> dict[int, int]:
    """Zeroes the payloads of the entries in data[start:start+size] whose architecture is not in keep;
    returns bytes zeroed (negative: kept) per architecture."""
    per_arch: dict[int, int] = {}
    off = 0
    while off + HEADER.size <= size:
        magic, _, header_size, entries_size = HEADER.unpack_from(data, start + off)
        if magic != FATBIN_MAGIC:  # fatbins are 8-byte aligned; padding lies between them
            off += 8
            continue
        entry, end = off + header_size, off + header_size + entries_size
        while entry < end:
            _, _, entry_header, payload = ENTRY.unpack_from(data, start + entry)
            arch, = struct.unpack_from("<I", data, start + entry + ENTRY_ARCH_OFFSET)
            first = start + entry + entry_header
            if arch in keep:
                per_arch[arch] = per_arch.get(arch, 0) - payload
            else:
                data[first:first + payload] = bytes(payload)
                per_arch[arch] = per_arch.get(arch, 0) + payload
            entry += entry_header + payload
        off = end
    return per_arch


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 2:
        print(__doc__.strip().splitlines()[-3])
        return 2
    path, keep = Path(args[0]), {int(a) for a in args[1:]}
    try:
        start, size = fatbin_section(path)
    except ValueError as e:
        print(e)
        return 2
    data = bytearray(path.read_bytes())
    per_arch = keep_arches(data, start, size, keep)
    if not any(n < 0 for n in per_arch.values()):
        print(f"{path}: none of the architectures {sorted(keep)} is in its fatbin ({sorted(per_arch)}); left as it was")
        return 2
    path.write_bytes(data)
    for arch, n in sorted(per_arch.items()):
        print(f"sm_{arch}: {'kept' if n < 0 else 'zeroed'} {abs(n) / 2**20:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
