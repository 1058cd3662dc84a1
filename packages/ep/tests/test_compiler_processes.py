"""The compiler processes behind the sessions: they die with their host, several requests are in
flight at once (a slow compile holds one process, not every session of the host), and a request
that timed out is not remembered as the compiler's answer."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import onnxruntime as ort
import pytest
from conftest import NO_FALLBACK, Env, make_session
from models import check_elementwise, elementwise, elementwise_feeds

# A host process: registers the EP and creates one session (the model and EP options in argv).
HOST = """
import json, sys
import hipdnn_ep, onnxruntime as ort
devices = hipdnn_ep.register(ort)
so = ort.SessionOptions()
so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
so.add_provider_for_devices(devices, json.loads(sys.argv[2]))
ort.InferenceSession(sys.argv[1], sess_options=so, enable_fallback=0)
"""


def _check(sess, shape: tuple[int, ...], middle: str = "Mul") -> None:
    check_elementwise(sess, elementwise_feeds(shape), middle)


def _running(pid: int) -> bool:
    """True while `pid` runs (a zombie, ended but not yet reaped by its new parent, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _wait_for(path: Path, seconds: float) -> str:
    """The text of `path` once it exists and is not empty."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.05)
    raise AssertionError(f"{path} did not appear within {seconds} s")


def _seconds_to_end(pid: int, limit: float = 10.0) -> float:
    """How long `pid` ran on (SIGKILLed after `limit` s, so no test leaves a process behind)."""
    start = time.monotonic()
    while _running(pid) and time.monotonic() - start < limit:
        time.sleep(0.01)
    elapsed = time.monotonic() - start
    if _running(pid):
        os.kill(pid, signal.SIGKILL)
    return elapsed


def _kill_host_while_compiler_waits(tmp_path: Path, options: dict[str, str], ready: Path) -> tuple[int, float]:
    """Starts a host creating a session, waits for `ready` (the compiler's pid, written once
    it is inside a request), kills the host with SIGKILL: the compiler's pid and how long the
    compiler outlived its host."""
    model = elementwise(tmp_path / "m.onnx", ["n", 4])
    host = subprocess.Popen([sys.executable, "-c", HOST, str(model), json.dumps(options)])
    try:
        pid = int(_wait_for(ready, 120))
        time.sleep(0.2)  # well inside the request
        assert _running(pid) and host.poll() is None
    finally:
        host.kill()
        host.wait()
    return pid, _seconds_to_end(pid)


def test_a_compiler_dies_with_its_host_killed_mid_compile(tmp_path: Path, env: Env, make_spy_python) -> None:
    """The issue's orphans: a host killed during a compile left its compiler running (parent pid 1)
    until the compile ended; it now ends within a second."""
    hold = tmp_path / "hold-dir"
    hold.mkdir()
    (hold / "hold").touch()
    options = dict(env.options, compiler_python=str(make_spy_python({"HIPDNN_EP_TEST_HOLD_DIR": hold})))
    try:
        pid, outlived = _kill_host_while_compiler_waits(tmp_path, options, hold / "held")
    finally:
        (hold / "release").touch()
    assert outlived < 1.0, f"the compiler (pid {pid}) outlived its host by {outlived:.2f} s"


def test_a_compiler_that_ignores_its_stdin_dies_with_its_host(tmp_path: Path, env: Env) -> None:
    """The host's side alone (PR_SET_PDEATHSIG): a 'compiler' that never notices its stdin close
    (it reads one request, then sleeps) is killed by the kernel when its host dies."""
    pid_file = tmp_path / "compiler.pid"
    stand_in = tmp_path / "python-sleeps"
    stand_in.write_text(f"#!/bin/sh\necho $$ > '{pid_file}'\nread -r line\nexec sleep 60\n")
    stand_in.chmod(0o755)
    options = dict(env.options, compiler_python=str(stand_in))
    pid, outlived = _kill_host_while_compiler_waits(tmp_path, options, pid_file)
    assert outlived < 1.0, f"the compiler (pid {pid}) outlived its host by {outlived:.2f} s"


def _compiler_pids(env: Env) -> list[int]:
    """The process id of the compiler that answered each compile request (from the spy's copies)."""
    return [int(Path(r["model_copy"]).parent.name.split("-")[1]) for r in env.compiles()]


def test_a_compiler_started_from_a_thread_that_ends_keeps_running(tmp_path: Path, ep_devices, env: Env,
                                                                  capfd) -> None:
    """PR_SET_PDEATHSIG fires when the *thread* that started the child ends: sessions created from
    short-lived threads must not lose the compiler process they started."""
    def first() -> None:
        _check(make_session(elementwise(tmp_path / "m0.onnx", ["n", 5]), ep_devices, env.options, NO_FALLBACK),
               (2, 5))

    thread = threading.Thread(target=first)
    thread.start()
    thread.join()
    (pid,) = _compiler_pids(env)
    time.sleep(0.5)
    assert _running(pid), "the compiler process ended with the thread that started it"
    _check(make_session(elementwise(tmp_path / "m1.onnx", ["n", 5], "Add"), ep_devices, env.options, NO_FALLBACK),
           (2, 5), "Add")
    assert _compiler_pids(env) == [pid, pid]
    assert "takes over" not in capfd.readouterr().err


def test_a_timed_out_request_is_not_remembered(tmp_path: Path, ep_devices, env: Env, make_spy_python) -> None:
    """A capabilities request that timed out (a compiler slow to start, compile_timeout 1 s) failed
    every later session of the process at once, even with a larger compile_timeout."""
    options = dict(env.options, compiler_python=str(make_spy_python({"HIPDNN_EP_TEST_START_DELAY": "3"})))
    model = elementwise(tmp_path / "m.onnx", ["n", 4])
    with pytest.raises(Exception, match=r"did not answer within 1 s and was stopped\. Raise the EP option "
                                        r"compile_timeout"):
        make_session(model, ep_devices, dict(options, compile_timeout="1"), NO_FALLBACK)
    _check(make_session(model, ep_devices, dict(options, compile_timeout="120"), NO_FALLBACK), (2, 4))
    actions = [r["action"] for r in env.requests()]  # (the support verdict may be known from other tests)
    assert actions[0] == "capabilities" and actions[-1] == "compile", actions


# On onnxruntime 1.23 a held compile's process is replaced and its request sent again (a second process
# takes the next hold file, and the first request's session completes): the held compiles do not stay held,
# so these two tests cannot observe concurrency there. Why 1.23 ends the held process is not understood yet
# (see the EP changelog's known issue).
ORT_123_REPLACES_HELD_COMPILERS = pytest.mark.skipif(
    ort.__version__.startswith("1.23."), reason="onnxruntime 1.23 replaces a held compiler process (known issue)")


@ORT_123_REPLACES_HELD_COMPILERS
def test_a_slow_compile_does_not_hold_up_another_session(tmp_path: Path, ep_devices, env: Env,
                                                         make_spy_python) -> None:
    """One session's compile hangs (a pathological graph holds its compiler process); a session of
    another model, in another thread of the same process and with the same compiler, gets its
    support check and compile meanwhile."""
    hold = tmp_path / "hold-dir"
    hold.mkdir()
    (hold / "hold").touch()
    options = dict(env.options, compiler_python=str(make_spy_python({"HIPDNN_EP_TEST_HOLD_DIR": hold})))
    results: dict[str, object] = {}

    def session(name: str, middle: str) -> None:
        try:
            model = elementwise(tmp_path / f"{name}.onnx", ["n", 6], middle)
            _check(make_session(model, ep_devices, options, NO_FALLBACK), (2, 6), middle)
            results[name] = time.monotonic()
        except Exception as exc:  # noqa: BLE001 - reported by the assertions below
            results[name] = exc

    slow = threading.Thread(target=session, args=("slow", "Mul"))
    slow.start()
    other = threading.Thread(target=session, args=("other", "Add"))
    try:
        slow_pid = int(_wait_for(hold / "held", 120))
        start = time.monotonic()
        other.start()
        other.join(60)
        finished = not other.is_alive()
        took = time.monotonic() - start
        still_held = slow.is_alive()
    finally:
        (hold / "release").touch()
        slow.join()
        other.join()
    assert finished and still_held, f"the other session waited for the slow compile ({took:.1f} s)"
    assert isinstance(results["other"], float), results["other"]
    assert isinstance(results["slow"], float) and results["slow"] > results["other"], results["slow"]
    support = [r for r in env.requests() if r["action"] == "support"]
    assert len(support) == 2, "each model had its support check"
    assert slow_pid not in _compiler_pids(env)[1:], "the other session's compile went to another process"


@ORT_123_REPLACES_HELD_COMPILERS
def test_compiles_leave_a_process_to_support_checks(tmp_path: Path, ep_devices, env: Env, make_spy_python) -> None:
    """Three compiles hang, each on a process of its own: a fourth session still gets its support
    check (on the fourth process), and its compile waits for one of the three to end."""
    hold = tmp_path / "hold-dir"
    hold.mkdir()
    for k in range(3):
        (hold / f"hold-{k}").touch()
    options = dict(env.options, compiler_python=str(make_spy_python({"HIPDNN_EP_TEST_HOLD_DIR": hold})))
    results: dict[str, object] = {}

    def session(name: str, dims: list, middle: str) -> None:
        try:
            _check(make_session(elementwise(tmp_path / f"{name}.onnx", dims, middle), ep_devices, options,
                                NO_FALLBACK), (2, dims[1]), middle)
            results[name] = "ok"
        except Exception as exc:  # noqa: BLE001 - reported by the assertions below
            results[name] = exc

    models = {"a": (["n", 13], "Mul"), "b": (["n", 13], "Add"), "c": (["n", 14], "Mul"), "d": (["n", 14], "Add")}
    threads = {name: threading.Thread(target=session, args=(name, *m)) for name, m in models.items()}
    try:
        for name in "abc":
            threads[name].start()
        held = {int(_wait_for(hold / f"held-{k}", 180)) for k in range(3)}
        assert len(held) == 3, "each held compile has a process of its own"
        threads["d"].start()
        deadline = time.monotonic() + 60
        while len([r for r in env.requests() if r["action"] == "support"]) < 4:
            assert time.monotonic() < deadline, "the fourth session's support check waited for the compiles"
            time.sleep(0.05)
        time.sleep(1.0)
        assert threads["d"].is_alive(), "the fourth session's compile took the process left to support checks"
    finally:
        (hold / "release").touch()
        for t in threads.values():
            if t.ident is not None:
                t.join()
    assert results == dict.fromkeys(models, "ok")
