"""Exported-symbol gate: the built library exports exactly the manifest's functions."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from .compat import Violation
from .model import Manifest


def exported_symbols(library: Path) -> dict[str, str]:
    """{symbol: version node} of the functions and data a shared library defines and exports."""
    nm = shutil.which("nm")
    if nm is None:
        raise RuntimeError("nm (binutils) is required to read the library's exported symbols")
    proc = subprocess.run([nm, "-D", "--defined-only", str(library)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"nm failed on {library}: {proc.stderr.strip()}")
    symbols: dict[str, str] = {}
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) != 3 or parts[1] == "A":  # "A" entries name the version nodes themselves
            continue
        name, _, version = parts[2].partition("@")
        symbols[name] = version.lstrip("@")
    return symbols


def check(manifest: Manifest, library: Path) -> list[Violation]:
    exported = exported_symbols(library)
    out: list[Violation] = []
    for fn in manifest.functions:
        if fn.name not in exported:
            callers = " and ".join(fn.callers)
            out.append(Violation(fn.name, f"declared in the manifest (since {manifest.major}.{fn.since}, called by "
                                          f"{callers}) but not exported by {library.name}: anything importing it "
                                          f"would fail with 'undefined symbol'"))
        elif exported[fn.name] != manifest.version_node(fn.since):
            out.append(Violation(fn.name, f"exported in version node '{exported[fn.name]}', the manifest says "
                                          f"{manifest.version_node(fn.since)}"))
    declared = {fn.name for fn in manifest.functions}
    for name in sorted(set(exported) - declared):
        out.append(Violation(name, f"exported by {library.name} but not declared in the manifest: declare it "
                                   f"(with a minor bump) or hide it"))
    return out
