"""The hipdnn_ep Python package: library lookup, names, registration."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import hipdnn_ep
import onnxruntime as ort
import pytest
from hipdnn_ep._library import find_library


def test_library_path_is_the_one_inside_the_package() -> None:
    path = Path(hipdnn_ep.get_library_path())
    assert path.is_absolute() and path.is_file()
    assert path.parent == Path(hipdnn_ep.__file__).resolve().parent


@pytest.mark.parametrize("names", [[], ["libhipdnn_ep_plugin.so", "libhipdnn_ep_plugin.old.so"]],
                         ids=["none", "two"])
def test_library_lookup_needs_exactly_one_candidate(tmp_path: Path, names: list[str]) -> None:
    for n in names:
        (tmp_path / n).write_bytes(b"")
    listing = ", ".join(sorted(names)) or "none"
    with pytest.raises(RuntimeError, match=f"found {len(names)}: {listing}"):
        find_library(tmp_path)


def test_names() -> None:
    assert hipdnn_ep.get_ep_name() == "HipdnnEp"
    assert hipdnn_ep.get_ep_names() == ["HipdnnEp"]


def test_import_has_no_side_effects() -> None:
    code = ("import os, sys; env = dict(os.environ); import hipdnn_ep; "
            "assert 'onnxruntime' not in sys.modules, 'onnxruntime imported'; "
            "assert dict(os.environ) == env, 'environment changed'")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize(("version", "ok"), [("1.23.0", True), ("1.32.0", True), ("1.23.2.dev1", True),
                                             ("1.22.1", False), ("0.9", False)])
def test_onnxruntime_version_check(version: str, ok: bool) -> None:
    if ok:
        hipdnn_ep.check_onnxruntime_version(version)
    else:
        with pytest.raises(RuntimeError, match=rf"needs onnxruntime>=1\.23\.0, but onnxruntime {version}"):
            hipdnn_ep.check_onnxruntime_version(version)


def test_register_is_idempotent_and_returns_cpu_device() -> None:
    first = hipdnn_ep.register(ort)
    second = hipdnn_ep.register()
    assert [d.ep_name for d in first] == ["HipdnnEp"] == [d.ep_name for d in second]
    assert first[0].device.type == ort.OrtHardwareDeviceType.CPU
    assert dict(first[0].ep_metadata)["backend"] == "cpu"


def _in_fresh_process(code: str) -> dict:
    """Runs `code` in a new interpreter (ONNX Runtime's EP registry is per process) and returns
    the JSON object it prints last."""
    prelude = "import json, threading\nimport onnxruntime as ort\nimport hipdnn_ep\n"
    done = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_register_from_eight_threads_at_once_registers_once() -> None:
    """Eight first calls racing: each returns the one device, none fails (before, the losers of
    the race got onnxruntime's 'EP library is already registered'). Five rounds, unregistering
    in between, so that the race is run, not only hoped for."""
    got = _in_fresh_process("""
        rounds = []
        for _ in range(5):
            barrier, errors, counts = threading.Barrier(8), [], []
            def call():
                barrier.wait()
                try:
                    counts.append(len(hipdnn_ep.register()))
                except Exception as e:
                    errors.append(str(e))
            threads = [threading.Thread(target=call) for _ in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            listed = sum(d.ep_name == hipdnn_ep.get_ep_name() for d in ort.get_ep_devices())
            rounds.append({"errors": errors, "counts": counts, "listed": listed})
            ort.unregister_execution_provider_library(hipdnn_ep.get_ep_name())
        print(json.dumps({"rounds": rounds}))
    """)
    assert got["rounds"] == [{"errors": [], "counts": [1] * 8, "listed": 1}] * 5


def test_register_accepts_the_library_registered_directly_under_its_name() -> None:
    got = _in_fresh_process("""
        ort.register_execution_provider_library(hipdnn_ep.get_ep_name(), hipdnn_ep.get_library_path())
        devices = hipdnn_ep.register()
        print(json.dumps({"devices": len(devices), "meta": dict(devices[0].ep_metadata)}))
    """)
    assert got["devices"] == 1
    assert got["meta"]["registration_name"] == "HipdnnEp"
    assert Path(got["meta"]["plugin_library"]).samefile(hipdnn_ep.get_library_path())


def test_register_under_a_second_name_is_refused() -> None:
    """The library registered as 'HipdnnEp', then asked for as 'other': refused, naming the
    registered name and how to unregister it (onnxruntime would load it twice, offering every
    device twice); the first registration stays, and a custom name is kept on repeated calls."""
    got = _in_fresh_process("""
        hipdnn_ep.register()
        try:
            hipdnn_ep.register(registration_name="other")
            error = None
        except RuntimeError as e:
            error = str(e)
        listed = sum(d.ep_name == hipdnn_ep.get_ep_name() for d in ort.get_ep_devices())
        ort.unregister_execution_provider_library(hipdnn_ep.get_ep_name())
        custom = [len(hipdnn_ep.register(registration_name="mine")) for _ in range(2)]
        print(json.dumps({"error": error, "listed": listed, "custom": custom}))
    """)
    assert got["error"] is not None and "already registered with onnxruntime as 'HipdnnEp'" in got["error"]
    assert "not registered again as 'other'" in got["error"]
    assert "unregister_execution_provider_library('HipdnnEp')" in got["error"]
    assert got["listed"] == 1
    assert got["custom"] == [1, 1]


def test_register_refuses_another_copy_of_the_library_registered_as_the_ep(tmp_path: Path) -> None:
    copy = tmp_path / Path(hipdnn_ep.get_library_path()).name
    shutil.copy2(hipdnn_ep.get_library_path(), copy)
    got = _in_fresh_process(f"""
        ort.register_execution_provider_library(hipdnn_ep.get_ep_name(), {str(copy)!r})
        try:
            hipdnn_ep.register()
            error = None
        except RuntimeError as e:
            error = str(e)
        print(json.dumps({{"error": error}}))
    """)
    assert got["error"] is not None
    assert f"already has HipdnnEp registered from {copy}, not from this package's" in got["error"]


def test_register_refuses_old_onnxruntime() -> None:
    class OldOrt:
        __version__ = "1.20.0"

    with pytest.raises(RuntimeError, match="needs onnxruntime>=1.23.0"):
        hipdnn_ep.register(OldOrt)  # type: ignore[arg-type]
