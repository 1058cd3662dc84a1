"""The ABI tool runs on Python 3.10 (the oldest the wheels support): there it reads TOML with tomli,
the backport of 3.11's tomllib. Here tomllib is hidden to take the 3.10 path on a newer Python."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ABI_DIR = Path(__file__).resolve().parents[1]

PROBE = """
import sys
sys.modules["tomllib"] = None  # as on Python 3.10: `import tomllib` fails
from hipdnn_ep_abi import DEFAULT_MANIFEST, load
print(type(load(DEFAULT_MANIFEST)).__name__, "tomli" in sys.modules)
"""


def test_manifest_loads_without_tomllib():
    proc = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=ABI_DIR)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["Manifest", "True"], proc.stdout
