"""Which interpreter runs the compiler when hipdnn-ep is not installed in a site-packages layout
(`pip install --target DIR`, a copied folder) and no option names one: the host Python as it was
started, so a virtual environment's interpreter keeps the environment's packages (its
bin/python symlink resolves to the base interpreter, which does not see them)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import hipdnn_ep
import hipdnn_ep_runtime
import pytest
from models import elementwise

# Runs in a fresh interpreter: registers the copied plugin, opens a session that must run on the EP
# (no CPU fallback), and prints the argv[0] of every child process (the compiler's among them).
_CHILD = r"""
import json, os, sys
sys.path.insert(0, sys.argv[1])
import hipdnn_ep, onnxruntime as ort
assert hipdnn_ep.__file__.startswith(sys.argv[1]), hipdnn_ep.__file__
so = ort.SessionOptions()
so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
so.add_provider_for_devices(hipdnn_ep.register(ort), {})
ort.InferenceSession(sys.argv[2], sess_options=so)
argv0 = []
for task in os.listdir("/proc/self/task"):
    for child in open(f"/proc/self/task/{task}/children").read().split():
        argv0.append(open(f"/proc/{child}/cmdline", "rb").read().split(b"\0")[0].decode())
print(json.dumps(argv0))
"""


@pytest.mark.skipif(sys.prefix == sys.base_prefix, reason="needs a virtual environment's interpreter")
def test_a_plugin_outside_site_packages_compiles_with_the_host_interpreter_as_started(tmp_path: Path) -> None:
    flat = tmp_path / "target"  # what `pip install --target` makes: packages side by side, no lib/pythonX.Y
    for package in (hipdnn_ep, hipdnn_ep_runtime):
        src = Path(package.__file__).parent
        shutil.copytree(src, flat / src.name)
    model = elementwise(tmp_path / "m.onnx", ["n", 4])
    env = dict(os.environ, HIPDNN_EP_CACHE_DIR=str(tmp_path / "cache"))
    venv_python = str(Path(sys.prefix) / "bin" / "python")
    run = subprocess.run([venv_python, "-c", _CHILD, str(flat), str(model)], env=env, capture_output=True,
                         text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    children = json.loads(run.stdout.strip().splitlines()[-1])
    assert venv_python in children, children
