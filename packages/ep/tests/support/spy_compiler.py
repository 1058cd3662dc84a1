"""Runs the real compiler and records what the EP asked of it.

The EP keeps `COMPILER_PYTHON -m hipdnn_ep_compiler.protocol --serve` running and sends it
one JSON request per line.  The tests point the option compiler_python at a wrapper script
that runs this file with the real interpreter; it

* appends each request to <log dir>/requests.jsonl, with a copy of the model the EP wrote
  (the EP deletes its own copy afterwards).  The log dir is read, for every request, from the
  file named by $HIPDNN_EP_TEST_COMPILE_LOG_POINTER (the wrapper sets it): one compiler
  process serves many tests, each recording into its own folder;
* answers with the real compiler (in this process); when the wrapper sets
  $HIPDNN_EP_TEST_CAPABILITIES (a JSON object), its fields replace those of the
  capabilities answer (to simulate another compiler release, or one for another runtime ABI).

* notes in each compile request it records whether the compiler already holds that model's
  lowering from the support check (`lowering_kept`);
* crashes (SIGSEGV) on a support or compile request while a file named `crash` exists beside
  that pointer file (to test how the EP replaces a compiler process that dies);
* when the wrapper sets $HIPDNN_EP_TEST_START_DELAY (seconds), sleeps that long before serving
  (a compiler whose start is slow);
* when the wrapper sets $HIPDNN_EP_TEST_HOLD_DIR, holds compile requests (slow compiles): a
  compile that finds a file `hold` (or `hold-N`) there removes it, writes its process id to
  `held` (`held-N`) and answers only once a file `release` appears (or after 300 s).
* when the wrapper sets $HIPDNN_EP_TEST_ATTACK (a JSON object), plays the local attacker of an
  ancestor folder of the compile cache once the first compile is answered (see `_attack`), or,
  with "give_output_to": UID, gives each compiled program.so to that user.

Without a log folder it is a transparent pass-through.  Without --serve it answers one
request from stdin, as `python -m hipdnn_ep_compiler.protocol` does."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import time
from pathlib import Path


def _log_dir() -> Path | None:
    pointer = os.environ.get("HIPDNN_EP_TEST_COMPILE_LOG_POINTER")
    if not pointer or not Path(pointer).is_file():
        return None
    text = Path(pointer).read_text().strip()
    return Path(text) if text else None


def _lowering_kept(request: dict) -> bool | None:
    """Whether the compiler holds the lowering of this compile's model from a support check
    (None: a compiler that keeps none)."""
    from hipdnn_ep_compiler import compiler

    if not hasattr(compiler, "lowering_key"):
        return None
    key = compiler.lowering_key(request["model"], request.get("manifest"), request.get("abi"))
    return key is not None and key in compiler._kept


def _record(request) -> None:
    log_dir = _log_dir()
    if log_dir is None:
        return
    log_dir.mkdir(parents=True, exist_ok=True)
    if isinstance(request, dict):
        request = dict(request)
        if request.get("action") == "compile" and isinstance(request.get("model"), str):
            request["lowering_kept"] = _lowering_kept(request)
        paths = [request["model"]] if isinstance(request.get("model"), str) else []
        paths += [m for m in request.get("models", []) if isinstance(m, str)]
        copies = []
        for path in paths:
            copy = log_dir / f"model-{os.getpid()}-{len(list(log_dir.glob('model-*')))}"
            shutil.copytree(Path(path).parent, copy, ignore=shutil.ignore_patterns("out"))
            copies.append(str(copy / Path(path).name))
        if "model" in request and copies:
            request["model_copy"] = copies[0]
        elif copies:
            request["model_copies"] = copies
    with open(log_dir / "requests.jsonl", "a") as f:
        f.write(json.dumps(request) + "\n")


def _crash_requested(request) -> bool:
    pointer = os.environ.get("HIPDNN_EP_TEST_COMPILE_LOG_POINTER")
    return bool(pointer) and isinstance(request, dict) and request.get("action") in ("support", "compile") \
        and Path(pointer).with_name("crash").exists()


def _hold(request) -> None:
    """Holds this compile until released, when it takes a `hold` file."""
    folder = os.environ.get("HIPDNN_EP_TEST_HOLD_DIR")
    if not folder or not isinstance(request, dict) or request.get("action") != "compile":
        return
    for hold in sorted(Path(folder).glob("hold*")):
        try:
            os.unlink(hold)  # only one request takes it
        except FileNotFoundError:
            continue
        held = Path(folder) / hold.name.replace("hold", "held")
        held.with_suffix(".part").write_text(str(os.getpid()))
        os.replace(held.with_suffix(".part"), held)
        break
    else:
        return
    deadline = time.monotonic() + 300
    while not (Path(folder) / "release").exists() and time.monotonic() < deadline:
        time.sleep(0.05)


_compiles_answered = 0


def _attack(plan: dict) -> None:
    """What another user who may write an ancestor of the cache folder can do between the compiler's
    write and the EP's read: rename the cache folder, put a symlink to a folder of his own in its
    place, and give each temporary build folder found there an out/program.so of his own (the shared
    object `plan["plant"]`, with the metadata section of the genuine output copied in, so the
    runtime's checks before loading it pass)."""
    import subprocess

    cache, moved, attacker = Path(plan["cache"]), Path(plan["moved"]), Path(plan["attacker"])
    os.rename(cache, moved)
    attacker.mkdir()
    for build in moved.glob(".tmp-*"):
        genuine = build / "out" / "program.so"
        if not genuine.is_file():
            continue
        meta = attacker / "meta.bin"
        subprocess.run(["objcopy", f"--dump-section=.hipdnn_ep_meta={meta}", str(genuine), str(attacker / "x.so")],
                       check=True)
        fake = attacker / build.name / "out" / "program.so"
        fake.parent.mkdir(parents=True)
        subprocess.run(["objcopy", f"--add-section=.hipdnn_ep_meta={meta}", plan["plant"], str(fake)], check=True)
    cache.symlink_to(attacker, target_is_directory=True)


def answer(request):
    from hipdnn_ep_compiler.protocol import handle

    if _crash_requested(request):
        os.kill(os.getpid(), signal.SIGSEGV)
    _record(request)
    _hold(request)
    response = handle(request)
    replace = os.environ.get("HIPDNN_EP_TEST_CAPABILITIES")
    if replace and isinstance(request, dict) and request.get("action") == "capabilities":
        response = dict(response, **json.loads(replace))
    attack = os.environ.get("HIPDNN_EP_TEST_ATTACK")
    if attack and isinstance(request, dict) and request.get("action") == "compile":
        global _compiles_answered
        _compiles_answered += 1
        plan = json.loads(attack)
        if "give_output_to" in plan and response.get("ok"):  # another user's file where the output should be
            os.chown(Path(response["artifact"]) / "program.so", plan["give_output_to"], plan["give_output_to"])
        elif _compiles_answered == 2:  # the first entry is published by now
            _attack(plan)
    return response


def main() -> int:
    from hipdnn_ep_compiler.protocol import serve

    time.sleep(float(os.environ.get("HIPDNN_EP_TEST_START_DELAY", "0")))
    if sys.argv[1:] == ["-m", "hipdnn_ep_compiler.protocol", "--serve"]:
        return serve(handler=answer)
    try:
        request = json.loads(sys.stdin.read())
    except json.JSONDecodeError as exc:
        print(json.dumps({"protocol": 2, "ok": False, "error": {"kind": "BadRequest", "message": str(exc)}}))
        return 2
    print(json.dumps(answer(request)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
