"""A missing or broken runtime or compiler, through sessions: each is a clear error naming the
fix, and a compiler process that dies or hangs is replaced or stopped."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import LOG_POINTER, NO_FALLBACK, Env, make_session
from hipdnn_ep._abi_info import REQUIRED_RUNTIME_ABI
from models import check_elementwise, elementwise, elementwise_feeds

# the runtime ABI this EP was built for
EP_ABI = REQUIRED_RUNTIME_ABI
EP_PIN = rf"'hipdnn-ep-runtime>={EP_ABI[0]}\.{EP_ABI[1]},<{EP_ABI[0] + 1}'"


def test_missing_runtime_is_a_clear_error(tmp_path: Path, ep_devices, env: Env) -> None:
    options = dict(env.options, runtime_library=str(tmp_path / "nowhere" / "libhipdnn_ep_runtime.so.1"))
    with pytest.raises(Exception, match=r"(?s)cannot load the hipdnn-ep runtime library.*nowhere.*pip install"):
        make_session(elementwise(tmp_path / "m.onnx", [2, 4]), ep_devices, options, NO_FALLBACK)


@pytest.mark.parametrize(("abi", "problem"), [((2, 0), "its ABI major differs"),
                                              ((1, 0), "its ABI minor is older than needed")])
def test_runtime_of_another_abi_is_refused(tmp_path: Path, ep_devices, env: Env, runtime_reporting_abi,
                                           abi: tuple[int, int], problem: str) -> None:
    options = dict(env.options, runtime_library=str(runtime_reporting_abi(*abi)))
    with pytest.raises(Exception, match=rf"has ABI {abi[0]}\.{abi[1]}, this EP needs ABI {EP_ABI[0]}\.{EP_ABI[1]}"
                                         rf".*{problem}\. Fix: pip install {EP_PIN}"):
        make_session(elementwise(tmp_path / "m.onnx", [2, 4]), ep_devices, options, NO_FALLBACK)
    assert env.compiles() == []


def test_runtime_of_the_right_abi_lacking_functions_is_a_broken_install(tmp_path: Path, ep_devices,
                                                                      env: Env) -> None:
    """The ABI the EP needs, but functions the EP calls are missing: reinstalling is the fix, not upgrading."""
    src = tmp_path / "lonely.c"
    src.write_text("#include <stdint.h>\nuint32_t hipdnn_ep_abi_version(void) { return "
                   f"({EP_ABI[0]}u << 16) | {EP_ABI[1]}u; }}\n")
    lib = tmp_path / "libruntime_lonely.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    options = dict(env.options, runtime_library=str(lib))
    abi = rf"{EP_ABI[0]}\.{EP_ABI[1]}"
    with pytest.raises(Exception, match=rf"has ABI {abi}, this EP needs ABI {abi} .*missing functions: "
                                         rf"\[hipdnn_ep_abi_manifest, .*Fix: pip install --force-reinstall {EP_PIN}"):
        make_session(elementwise(tmp_path / "m.onnx", [2, 4]), ep_devices, options, NO_FALLBACK)


def test_missing_compiler(tmp_path: Path, ep_devices, env: Env, broken_compiler, capfd) -> None:
    model = elementwise(tmp_path / "m.onnx", ["n", 4])
    options = dict(env.options, compiler_python=str(tmp_path / "no-python"))
    # With fallback the model still runs (on the CPU EP), and a warning at ORT's default log level
    # says why and how to fix it: a broken install is not a verdict on the model ...
    check_elementwise(make_session(model, ep_devices, options), elementwise_feeds((2, 4)))
    err = capfd.readouterr().err
    assert re.search(r"(?s)the compiler could not be used, so this graph's nodes run on other EPs: .*cannot start"
                     r".*no-python.*Fix: install hipdnn-ep-compiler", err), err
    # ... also where an interpreter starts but cannot import what the compiler needs.
    broken = dict(env.options, compiler_python=str(broken_compiler("no-numpy")))
    check_elementwise(make_session(elementwise(tmp_path / "m2.onnx", ["n", 4]), ep_devices, broken),
                      elementwise_feeds((2, 4)))
    err = capfd.readouterr().err
    assert re.search(r"(?s)the compiler could not be used.*No module named 'numpy'.*Fix: install", err), err
    # ... without it, every node is listed with the reason.
    with pytest.raises(Exception, match=r"(?s)node 'add0' \(Add\): the compiler is unavailable.*cannot start"):
        make_session(model, ep_devices, options, NO_FALLBACK)


@pytest.mark.parametrize(("kind", "message"), [
    ("garbage", r"answered without a valid JSON response.*stdout:\nthis is not JSON"),
    ("crash", r"exited with code .* without a valid JSON response.*stderr:\nSegmentation fault in the compiler"),
    ("not-ok", r"reported an error: no error message"),
    ("other-protocol", r"answered in compiler protocol 4, but this EP speaks protocol 3\. Install a "
                       r"hipdnn-ep-compiler that speaks it"),
    # a compiler before 0.4.1, which cannot read weights held by reference (protocol 3)
    ("refuses-protocol", r"reported an error: BadRequest: unsupported protocol 3; this compiler speaks 1, 2 "
                         r"\(upgrade the older of hipdnn-ep and hipdnn-ep-compiler\)"),
    # answers that break packages/abi/protocol.toml, refused naming the field
    ("retyped-field", r"answered a capabilities request with a malformed capabilities_response \(field "
                      r"'compiler_version': expected a string; packages/abi/protocol.toml declares it\): install "
                      r"matching hipdnn-ep and hipdnn-ep-compiler versions"),
    ("missing-field", r"malformed capabilities_response \(field 'build_id': missing \(required\)"),
    ("oversized-value", r"malformed capabilities_response \(field 'abi.major': expected an integer"),
    ("malformed-error", r"reported an error: an error the compiler did not word \(malformed error_response: field "
                        r"'error.kind': expected a string\)"),
])
def test_misbehaving_compiler_is_a_clear_error(tmp_path: Path, ep_devices, env: Env, broken_compiler,
                                               kind: str, message: str) -> None:
    options = dict(env.options, compiler_python=str(broken_compiler(kind)))
    with pytest.raises(Exception, match=rf"(?s){message}"):
        make_session(elementwise(tmp_path / "m.onnx", ["n", 4]), ep_devices, options, NO_FALLBACK)


@pytest.mark.parametrize(("kind", "dims", "message"), [
    ("malformed-support", ["n", 11], r"answered a support request with a malformed support_response \(field "
                                     r"'models\[0\].nodes\[0\].index': expected an integer"),
    ("malformed-compile", ["n", 13], r"answered a compile request with a malformed compile_response \(field "
                                     r"'artifact': expected a string; packages/abi/protocol.toml declares it\)"),
])
def test_a_malformed_support_or_compile_answer_is_refused_naming_the_field(tmp_path: Path, ep_devices, env: Env,
                                                                          broken_compiler, kind: str, dims: list,
                                                                          message: str) -> None:
    """The real compiler, but its support (or compile) answer breaks protocol.toml; a graph of its own, so
    that no support verdict or artifact of another test answers for it."""
    options = dict(env.options, compiler_python=str(broken_compiler(kind)))
    with pytest.raises(Exception, match=rf"(?s){message}"):
        make_session(elementwise(tmp_path / "m.onnx", dims, "Sub"), ep_devices, options, NO_FALLBACK)


def _server_pids(env: Env) -> list[int]:
    """The process id of the compiler that answered each compile request (from the spy's copies)."""
    return [int(Path(r["model_copy"]).parent.name.split("-")[1]) for r in env.compiles()]


def test_one_compiler_process_serves_every_session_and_is_restarted_when_it_dies(tmp_path: Path, ep_devices,
                                                                                   env: Env) -> None:
    for k, middle in enumerate(("Mul", "Add")):
        check_elementwise(make_session(elementwise(tmp_path / f"m{k}.onnx", ["n", 4], middle), ep_devices, env.options,
                                       NO_FALLBACK), elementwise_feeds((2, 4)), middle)
    first, second = _server_pids(env)
    assert first == second, "the second session's compile went to the same compiler process"
    os.kill(first, signal.SIGKILL)
    check_elementwise(make_session(elementwise(tmp_path / "m2.onnx", [3, 4]), ep_devices, env.options, NO_FALLBACK),
                      elementwise_feeds((3, 4)))
    assert _server_pids(env)[-1] != first, "a new compiler process took over"


def test_a_compiler_that_dies_during_a_request_is_replaced_once_and_announced(tmp_path: Path, ep_devices, env: Env,
                                                                              capfd) -> None:
    check_elementwise(make_session(elementwise(tmp_path / "m0.onnx", ["n", 7]), ep_devices, env.options, NO_FALLBACK),
                      elementwise_feeds((2, 7)))
    first = _server_pids(env)[-1]
    crash = LOG_POINTER.with_name("crash")
    crash.touch()
    try:  # the running process dies on the request, and so does the one started to retry it
        with pytest.raises(Exception, match=rf"(?s)exited with code {128 + signal.SIGSEGV} without a valid JSON "
                                            r"response.*It was the second compiler process to end during this "
                                            rf"request \(the first one \(pid {first}\) was killed by signal "
                                            rf"{signal.SIGSEGV} during a request\)"):
            make_session(elementwise(tmp_path / "m1.onnx", ["n", 7], "Sub"), ep_devices, env.options, NO_FALLBACK)
    finally:
        crash.unlink()
    check_elementwise(make_session(elementwise(tmp_path / "m2.onnx", ["n", 7], "Add"), ep_devices, env.options,
                                   NO_FALLBACK), elementwise_feeds((2, 7)), "Add")
    assert _server_pids(env)[-1] != first
    err = capfd.readouterr().err
    assert re.search(rf"the compiler process \(pid {first}\) was killed by signal {signal.SIGSEGV} during a "
                     r"request; a new one \(pid \d+\) takes over", err), err
    assert re.search(rf"the compiler process \(pid \d+\) was killed by signal {signal.SIGSEGV} during a "
                     r"request; a new one \(pid \d+\) takes over", err.split("takes over", 1)[1]), err


def test_compile_timeout_stops_a_hung_compiler(tmp_path: Path, ep_devices, env: Env, broken_compiler) -> None:
    options = dict(env.options, compiler_python=str(broken_compiler("hang")), compile_timeout="1")
    start = time.monotonic()
    with pytest.raises(Exception, match=r"did not answer within 1 s and was stopped\. Raise the EP option "
                                        r"compile_timeout"):
        make_session(elementwise(tmp_path / "m.onnx", ["n", 4]), ep_devices, options, NO_FALLBACK)
    assert time.monotonic() - start < 30
