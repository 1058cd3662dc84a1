"""Versioned JSON protocol for hosts that call the compiler as a subprocess (the EP does).

Every message and field is declared in packages/abi/protocol.toml (the README's table lists them);
abi/protocol_schema.py, generated from it, is the validator this module runs on each request it
reads and each answer it writes.

  python -m hipdnn_ep_compiler.protocol < request.json > response.json      (one request)
  python -m hipdnn_ep_compiler.protocol --serve     (many: one JSON request per line in, one response
                                                    per line out, until stdin closes; see serve())

Request:  {"protocol": 3, "action": "capabilities"}
          {"protocol": 3, "action": "compile", "model": PATH, "output": DIR,
           "backend": "cpu"|"cuda"|"hip" (optional), "abi": "MAJOR.MINOR" (optional),
           "manifest": PATH of a runtime ABI manifest JSON (optional; default: the bundled one)}
          {"protocol": 3, "action": "support", "models": [PATH, ...],
           "backend", "abi", "manifest" (optional, as for compile)}
Response: {"protocol": 3, "ok": true, ...} or {"protocol": 3, "ok": false, "error": {"kind", "message"}}
  capabilities -> "compiler_version", "build_id" (a digest of the compiler's content, see build_id.py),
                  "abi": {"major", "minors": [..]}, "backends", "ops", "protocols",
                  "install_files" (a host may reuse this answer while none of these files changes)
  compile      -> "artifact": DIR, "metadata": {...}
  support      -> "models": [{"nodes": [{"index", "name", "op_type", "domain", "supported",
                                        "reason" (when not supported)}, ...]}, ...]
Protocol 1 requests (capabilities and compile, which are unchanged) are still answered, as
protocol 1; support needs protocol 2. Protocol 3 only adds that a model may hold its weights by reference
(the property hipdnn_ep.weights=host: external data no file holds); 1 and 2 are still answered.
The exit status is 0 whenever a response was written (check "ok"); 2 if the request is unreadable.
A serving process ends with its host: when nobody can read its answers any more (the read end of
its stdout is closed) or its parent process changes, it exits at once (status 3), even inside a
request; see serve().
"""

from __future__ import annotations

import json
import os
import select
import sys
import threading
from collections.abc import Callable
from typing import Any

from .abi import protocol_schema

PROTOCOL = protocol_schema.MAJOR  # the protocol packages/abi/protocol.toml declares
# answered; 1 lacks "support"; 3: a model may hold its weights by reference (property hipdnn_ep.weights=host)
PROTOCOLS = (1, 2, 3)
HOST_GONE_STATUS = 3  # the exit status of a serving process whose host went away
_PARENT_POLL_S = 0.25


def _error(kind: str, message: str, protocol: int = PROTOCOL) -> dict[str, Any]:
    return {"protocol": protocol, "ok": False, "error": {"kind": kind, "message": message}}


def _install_files() -> list[str]:
    """Files that change whenever this compiler is installed anew, its sources are edited or its
    interpreter is replaced: a host may keep this capabilities answer while none of them changes."""
    import os
    from importlib import metadata
    from pathlib import Path

    from .build_id import source_files

    # The sources cover an edited checkout (an editable install): the build id changes with them.
    files = [os.path.realpath(sys.executable), *map(str, source_files())]
    try:
        record = [f for f in metadata.distribution("hipdnn-ep-compiler").files or [] if f.name == "RECORD"]
        files += [str(Path(f.locate()).resolve()) for f in record]
    except metadata.PackageNotFoundError:  # running from a source tree
        pass
    return files


_HINTS = {"compile": "compile needs string fields: model, output",
          "support": "support needs 'models': a list of model paths"}


def _malformed(action: str, request: dict[str, Any], version: int) -> dict[str, Any] | None:
    """The BadRequest for a request that breaks its message in protocol.toml (None when it conforms;
    members the schema does not declare are ignored: a newer minor's)."""
    found = protocol_schema.problems(request, known_only=False, message=f"{action}_request")
    if not found:
        return None
    hint = f" ({_HINTS[action]})" if action in _HINTS else ""
    return _error("BadRequest", f"malformed {action} request: {'; '.join(found)}{hint}", version)


def _checked(response: dict[str, Any], action: str) -> dict[str, Any]:
    """`response`, if it conforms to its message in protocol.toml; else an InternalError naming
    each field it breaks (a compiler bug, reported as one rather than sent for the host to trip on)."""
    found = protocol_schema.problems(response, message=f"{action}_response")
    if not found:
        return response
    return _error("InternalError", f"the compiler wrote a malformed {action} response (a bug in "
                  f"hipdnn-ep-compiler): {'; '.join(found[:5])}", response.get("protocol", PROTOCOL))


def handle(request: Any) -> dict[str, Any]:
    """The response to one request (a parsed JSON value)."""
    from . import errors

    if not isinstance(request, dict):
        return _error("BadRequest", "the request must be a JSON object")
    version = request.get("protocol")
    if version not in PROTOCOLS:
        return _error("BadRequest", f"unsupported protocol {version!r}; this compiler speaks "
                      f"{', '.join(map(str, PROTOCOLS))} (upgrade the older of hipdnn-ep and hipdnn-ep-compiler)")
    action = request.get("action")
    if action in ("capabilities", "compile", "support"):
        if action == "support" and version < 2:
            return _error("BadRequest", "support needs protocol 2", version)
        refusal = _malformed(action, request, version)
        if refusal is not None:
            return refusal
    if action == "capabilities":
        from ._version import __version__
        from .abi import load_abi
        from .artifact import BACKENDS
        from .build_id import build_id
        from .ops import supported_ops

        abi = load_abi()
        return _checked({"protocol": version, "ok": True, "compiler_version": __version__,
                         "build_id": build_id(), "abi": {"major": abi.major, "minors": list(range(abi.minor + 1))},
                         "backends": list(BACKENDS), "ops": supported_ops(), "protocols": list(PROTOCOLS),
                         "install_files": _install_files()}, action)
    if action == "compile":
        from .compiler import compile_model

        try:
            info = compile_model(request["model"], request["output"], backend=request.get("backend", "cpu"),
                                 abi=request.get("abi"), manifest=request.get("manifest"))
        except errors.CompileError as exc:
            return _error(type(exc).__name__, str(exc), version)
        return _checked({"protocol": version, "ok": True, "artifact": str(info.path), "metadata": info.metadata},
                        action)
    if action == "support":
        models = request["models"]
        from .support import check_support

        answers = []
        try:
            for path in models:
                verdicts = check_support(path, backend=request.get("backend", "cpu"), abi=request.get("abi"),
                                         manifest=request.get("manifest"))
                answers.append({"nodes": [v.to_json() for v in verdicts]})
        except errors.CompileError as exc:
            return _error(type(exc).__name__, str(exc), version)
        return _checked({"protocol": version, "ok": True, "models": answers}, action)
    return _error("BadRequest", f"unknown action {action!r} (expected 'capabilities', 'compile' or 'support')",
                  version)


def prepare() -> None:
    """Imports everything a support query or a compile needs (the ONNX and MLIR bindings and the
    compiler's passes, lowering and object emission), which is most of a first compile's time.
    serve() calls it before reading the first request, so the imports run while the host is still
    busy with its own work. An import that fails here fails again, with its message, in the
    request that needs it."""
    try:
        import torch_mlir.dialects.llvm  # noqa: F401  (the lowering's first use imports these)
        import torch_mlir.execution_engine  # noqa: F401
        import torch_mlir.passmanager  # noqa: F401

        from . import compiler, support  # noqa: F401
    except Exception:  # noqa: BLE001 - a broken install is reported by the request it breaks
        pass


def _watch_host(answers_fd: int, parent: int | None) -> None:
    """Ends this process when its host is gone, also in the middle of a request (a compile of a
    pathological graph may run for many minutes and many GB): when the read end of the responses'
    pipe closes (poll reports an error on the write end: nobody will read the answer) or, where
    `parent` is given, when the parent process changes (this process was reparented: the host
    died while something else, a child it forked, still holds the pipe). Runs on its own thread.
    The host also has the kernel kill this process when it dies (PR_SET_PDEATHSIG), which works
    even while native code holds the GIL; this covers the cases that does not (a wrapper between
    host and interpreter, an interpreter started by other hosts)."""
    poller = select.poll()
    poller.register(answers_fd, select.POLLERR | select.POLLHUP)
    while True:
        if poller.poll(_PARENT_POLL_S * 1000) or (parent is not None and os.getppid() != parent):
            os._exit(HOST_GONE_STATUS)


def _start_host_watch(stdout, parent: int | None) -> None:
    try:
        fd = stdout.fileno()
    except (AttributeError, OSError, ValueError):  # an in-memory stream: nothing to watch
        return
    threading.Thread(target=_watch_host, args=(fd, parent), name="hipdnn-ep-host-watch", daemon=True).start()


def serve(stdin=None, stdout=None, handler: Callable[[Any], dict[str, Any]] = handle) -> int:
    """Answers requests until stdin closes: one JSON request per line in, one JSON response per
    line out, in order (JSON text has no raw newlines). Anything else the compiler or its
    libraries print goes to stderr, so stdout carries responses only. `handler` answers one
    parsed request (default: handle). The compile path is imported first (see prepare).

    Stdin closing ends the loop once the requests read are answered (a script may pipe in a file
    of requests); the host going away ends the process at once (see _watch_host): when stdout is
    a pipe whose reader closes it, and, when serve() owns the real stdout (stdout=None), when the
    parent process changes."""
    parent = None
    if stdout is None:  # keep the real stdout for responses; fd 1 (print, native code) goes to stderr
        parent = os.getppid()
        sys.stdout.flush()
        stdout = os.fdopen(os.dup(1), "w", encoding="utf-8")
        os.dup2(2, 1)
    _start_host_watch(stdout, parent)
    stdin = stdin or sys.stdin
    prepare()
    for line in stdin:
        if not line.strip():
            continue
        try:
            response = handler(json.loads(line))
        except json.JSONDecodeError as exc:
            response = _error("BadRequest", f"request is not JSON: {exc}")
        except Exception as exc:  # noqa: BLE001 - a compiler bug fails this request, not the server
            import traceback

            traceback.print_exc()
            response = _error("InternalError", f"{type(exc).__name__}: {exc}")
        stdout.write(json.dumps(response) + "\n")
        stdout.flush()
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--serve"]:
        return serve()
    if argv:
        print(f"usage: python -m hipdnn_ep_compiler.protocol [--serve] (got {' '.join(argv)})", file=sys.stderr)
        return 2
    try:
        request = json.loads(sys.stdin.read())
    except json.JSONDecodeError as exc:
        print(json.dumps(_error("BadRequest", f"request is not JSON: {exc}")))
        return 2
    print(json.dumps(handle(request)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
