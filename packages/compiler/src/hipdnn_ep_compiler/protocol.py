"""Versioned JSON protocol for hosts that call the compiler as a subprocess (the EP does).

  python -m hipdnn_ep_compiler.protocol < request.json > response.json

Request:  {"protocol": 1, "action": "capabilities"}
          {"protocol": 1, "action": "compile", "model": PATH, "output": DIR,
           "backend": "cpu"|"cuda"|"hip" (optional), "abi": "MAJOR.MINOR" (optional),
           "manifest": PATH of a runtime ABI manifest JSON (optional; default: the bundled one)}
Response: {"protocol": 1, "ok": true, ...} or {"protocol": 1, "ok": false, "error": {"kind", "message"}}
  capabilities -> "compiler_version", "abi": {"major", "minors": [..]}, "backends", "ops"
  compile      -> "artifact": DIR, "metadata": {...}
The exit status is 0 whenever a response was written (check "ok"); 2 if the request is unreadable.
"""

from __future__ import annotations

import json
import sys
from typing import Any

PROTOCOL = 1


def _error(kind: str, message: str) -> dict[str, Any]:
    return {"protocol": PROTOCOL, "ok": False, "error": {"kind": kind, "message": message}}


def handle(request: Any) -> dict[str, Any]:
    """The response to one request (a parsed JSON value)."""
    from . import errors

    if not isinstance(request, dict):
        return _error("BadRequest", "the request must be a JSON object")
    if request.get("protocol") != PROTOCOL:
        return _error("BadRequest",
                      f"unsupported protocol {request.get('protocol')!r}; this compiler speaks {PROTOCOL}")
    action = request.get("action")
    if action == "capabilities":
        from ._version import __version__
        from .abi import load_abi
        from .compiler import BACKENDS
        from .frontend import supported_ops

        abi = load_abi()
        return {"protocol": PROTOCOL, "ok": True, "compiler_version": __version__,
                "abi": {"major": abi.major, "minors": list(range(abi.minor + 1))},
                "backends": list(BACKENDS), "ops": supported_ops()}
    if action == "compile":
        missing = [k for k in ("model", "output") if not isinstance(request.get(k), str)]
        if missing:
            return _error("BadRequest", f"compile needs string fields: {', '.join(missing)}")
        from .compiler import compile_model

        try:
            info = compile_model(request["model"], request["output"], backend=request.get("backend", "cpu"),
                                 abi=request.get("abi"), manifest=request.get("manifest"))
        except errors.CompileError as exc:
            return _error(type(exc).__name__, str(exc))
        return {"protocol": PROTOCOL, "ok": True, "artifact": str(info.path), "metadata": info.metadata}
    return _error("BadRequest", f"unknown action {action!r} (expected 'compile' or 'capabilities')")


def main() -> int:
    try:
        request = json.loads(sys.stdin.read())
    except json.JSONDecodeError as exc:
        print(json.dumps(_error("BadRequest", f"request is not JSON: {exc}")))
        return 2
    print(json.dumps(handle(request)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
