"""Runs the real compiler and records what the EP asked of it.

The EP starts `COMPILER_PYTHON -m hipdnn_ep_compiler.protocol` with one JSON
request on stdin.  The tests point the option compiler_python at a wrapper
script that runs this file with the real interpreter; it

* appends each request to $HIPDNN_EP_TEST_COMPILE_LOG/requests.jsonl, with a
  copy of the model the EP wrote (the EP deletes its own copy afterwards);
* forwards the request to the real compiler and returns its answer; when the
  wrapper sets $HIPDNN_EP_TEST_CAPABILITIES (a JSON object), its fields
  replace those of the capabilities answer (to simulate another compiler
  release, or one for another runtime ABI).

Without a log folder it is a transparent pass-through."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path


def _record(request_text: str) -> None:
    log = os.environ.get("HIPDNN_EP_TEST_COMPILE_LOG")
    if not log:
        return
    log_dir = Path(log)
    log_dir.mkdir(parents=True, exist_ok=True)
    try:
        request = json.loads(request_text)
    except json.JSONDecodeError:
        request = {"unparsable": request_text}
    if isinstance(request, dict) and isinstance(request.get("model"), str):
        src = Path(request["model"]).parent
        copy = log_dir / f"model-{os.getpid()}-{len(list(log_dir.glob('model-*')))}"
        shutil.copytree(src, copy, ignore=shutil.ignore_patterns("out"))
        request["model_copy"] = str(copy / Path(request["model"]).name)
    with open(log_dir / "requests.jsonl", "a") as f:
        f.write(json.dumps(request) + "\n")


def main() -> int:
    request_text = sys.stdin.read()
    _record(request_text)
    r = subprocess.run([sys.executable, *sys.argv[1:]], input=request_text, capture_output=True, text=True)
    sys.stderr.write(r.stderr)
    out = r.stdout
    replace = os.environ.get("HIPDNN_EP_TEST_CAPABILITIES")
    if replace and json.loads(request_text).get("action") == "capabilities":
        out = json.dumps(dict(json.loads(out), **json.loads(replace)))
    sys.stdout.write(out)
    return r.returncode


if __name__ == "__main__":
    sys.exit(main())
