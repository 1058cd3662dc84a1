"""The hipdnn-ep command line: doctor, compile, run, bench."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from ._library import get_ep_name, get_library_path


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def _foreign_ancestor(path: Path) -> bool:
    """True when a folder above `path` belongs to another user than this process's and root."""
    me = os.geteuid()
    for folder in Path(os.path.normpath(path.absolute())).parents:
        try:
            owner = folder.stat().st_uid
        except OSError:
            continue
        if owner not in (me, 0):
            return True
    return False


def default_cache_dir() -> Path:
    """The compile cache's default location (as the plugin computes it): the per-user folder in the
    temporary directory replaces a default below a folder of another user (a HOME of another user)."""
    env = os.environ.get("HIPDNN_EP_CACHE_DIR")
    if env:
        return Path(env)
    per_user = Path(tempfile.gettempdir()) / f"hipdnn-ep-cache-{os.geteuid()}"
    xdg = os.environ.get("XDG_CACHE_HOME")
    home = os.environ.get("HOME")
    if xdg:
        default = Path(xdg) / "hipdnn-ep"
    elif home:
        default = Path(home) / ".cache" / "hipdnn-ep"
    else:
        return per_user
    return per_user if _foreign_ancestor(default) else default


def abi_verdict(runtime_abi: tuple[int, int] | None, required: tuple[int, int]) -> str:
    """One line saying whether a runtime ABI satisfies the plugin's (pure)."""
    need = f"{required[0]}.{required[1]}"
    if runtime_abi is None:
        return f"FAIL: no runtime ABI found (need {need}); pip install 'hipdnn-ep-runtime>={need},<{required[0] + 1}'"
    have = f"{runtime_abi[0]}.{runtime_abi[1]}"
    if runtime_abi[0] != required[0]:
        return f"FAIL: runtime ABI {have} has another major than the required {need}"
    if runtime_abi[1] < required[1]:
        return f"FAIL: runtime ABI {have} is older than the required {need}"
    return f"OK: runtime ABI {have} satisfies {need}"


def exports_verdict(missing: list[str] | None, abi: tuple[int, int] | None) -> str:
    """One line saying whether the runtime library exports every function its manifest declares (pure)."""
    if missing is None:
        return "SKIP: this hipdnn-ep-runtime cannot list its exports (it predates missing_exports())"
    if not missing:
        return "OK: every function of the runtime's ABI manifest resolves by name and version"
    pin = f"'hipdnn-ep-runtime>={abi[0]}.{abi[1]},<{abi[0] + 1}'" if abi else "hipdnn-ep-runtime"
    return (f"FAIL: the runtime library does not export {len(missing)} function(s) its own ABI manifest declares: "
            f"[{', '.join(missing)}]; compiled models calling them would be refused. "
            f"Fix: reinstall a released runtime wheel: pip install --force-reinstall {pin}")


def _runtime_missing_exports() -> list[str] | None:
    try:
        import hipdnn_ep_runtime  # noqa: PLC0415
    except ImportError:
        return None
    check = getattr(hipdnn_ep_runtime, "missing_exports", None)
    return None if check is None else list(check())


def _runtime_abi() -> tuple[int, int] | None:
    try:
        import hipdnn_ep_runtime  # noqa: PLC0415
    except ImportError:
        return None
    version = getattr(hipdnn_ep_runtime, "abi_version", None)
    if version is None:
        return None
    v = version() if callable(version) else version
    if isinstance(v, int):
        return v >> 16, v & 0xFFFF
    return int(v[0]), int(v[1])


def cmd_doctor(args: argparse.Namespace) -> int:
    from ._abi_info import REQUIRED_RUNTIME_ABI  # noqa: PLC0415

    for dist in ("hipdnn-ep", "hipdnn-ep-runtime", "hipdnn-ep-compiler", "onnxruntime"):
        print(f"{dist:20} {_version(dist)}")
    verdict = abi_verdict(_runtime_abi(), REQUIRED_RUNTIME_ABI)
    print(f"{'runtime ABI':20} {verdict}")
    runtime_abi = _runtime_abi()
    exports = exports_verdict(_runtime_missing_exports(), runtime_abi) if runtime_abi else "SKIP: no runtime"
    print(f"{'runtime exports':20} {exports}")
    print(f"{'plugin library':20} {get_library_path()}")
    print(f"{'cache dir':20} {default_cache_dir()}")
    ok = verdict.startswith("OK") and not exports.startswith("FAIL")
    try:
        from ._registration import register  # noqa: PLC0415

        devices = register()
        for d in devices:
            print(f"{'device':20} {d.device.type.name} vendor={d.device.vendor!r} metadata={dict(d.ep_metadata)}")
    except Exception as exc:  # noqa: BLE001 - doctor reports every failure
        print(f"{'devices':20} FAIL: {exc}")
        ok = False
    return 0 if ok else 1


def _session(model: str, ep: bool, options: dict[str, str], config: dict[str, str]) -> Any:
    import onnxruntime as ort  # noqa: PLC0415

    from ._registration import register  # noqa: PLC0415

    so = ort.SessionOptions()
    for k, v in config.items():
        so.add_session_config_entry(k, v)
    if ep:
        so.add_provider_for_devices(register(ort), options)
        return ort.InferenceSession(model, sess_options=so)
    return ort.InferenceSession(model, sess_options=so, providers=["CPUExecutionProvider"])


def _pairs(items: Sequence[str], what: str) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"hipdnn-ep: {what} must be KEY=VALUE, got {item!r}")
        out[key] = value
    return out


def cmd_compile(args: argparse.Namespace) -> int:
    """Ahead-of-time compile: write an EPContext model next to the input."""
    out = Path(args.output or Path(args.model).with_suffix("").as_posix() + "_ctx.onnx").resolve()
    config = {"ep.context_enable": "1", "ep.context_file_path": str(out),
              "ep.context_embed_mode": "1" if args.embed else "0"}
    _session(args.model, True, _pairs(args.option, "--option"), config)
    if not out.exists():
        print(f"hipdnn-ep: no EPContext model was written to {out}", file=sys.stderr)
        return 1
    _keep_source_ir_version(Path(args.model), out)
    print(out)
    return 0


def _keep_source_ir_version(source: Path, written: Path) -> None:
    """ORT stamps an EPContext model with the newest ONNX IR version it knows, so an older ORT on the
    machine the model is deployed to refuses it although nothing in it needs that version (seen:
    written by ORT 1.32, refused by ORT 1.30). Give it back the source model's IR version."""
    import onnx  # noqa: PLC0415 - the compiler's dependency; only this command needs it

    source_ir = onnx.load(str(source), load_external_data=False).ir_version
    model = onnx.load(str(written), load_external_data=False)
    if source_ir < model.ir_version:
        model.ir_version = source_ir
        onnx.save(model, str(written))


def _random_inputs(session: Any, dims: dict[str, int], seed: int) -> dict[str, Any]:
    import numpy as np  # noqa: PLC0415

    types = {"tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
             "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(int8)": np.int8,
             "tensor(uint8)": np.uint8, "tensor(bool)": np.bool_, "tensor(int16)": np.int16,
             "tensor(uint16)": np.uint16, "tensor(uint32)": np.uint32, "tensor(uint64)": np.uint64}
    rng = np.random.default_rng(seed)
    feeds = {}
    for inp in session.get_inputs():
        if inp.type not in types:
            raise SystemExit(f"hipdnn-ep: input {inp.name} has type {inp.type}, which run cannot generate")
        shape = [d if isinstance(d, int) and d >= 0 else dims.get(str(d), 1) for d in inp.shape]
        dtype = types[inp.type]
        if np.issubdtype(dtype, np.floating):
            feeds[inp.name] = rng.standard_normal(shape).astype(dtype)
        elif dtype is np.bool_:
            feeds[inp.name] = rng.integers(0, 2, shape).astype(np.bool_)
        else:
            feeds[inp.name] = rng.integers(0, 8, shape).astype(dtype)
    return feeds


def cmd_run(args: argparse.Namespace) -> int:
    import numpy as np  # noqa: PLC0415

    config = {"session.disable_cpu_ep_fallback": "1"} if args.no_fallback else {}
    ep_sess = _session(args.model, True, _pairs(args.option, "--option"), config)
    cpu_sess = _session(args.model, False, {}, {})
    dims = {k: int(v) for k, v in _pairs(args.dim, "--dim").items()}
    feeds = _random_inputs(cpu_sess, dims, args.seed)
    if args.inputs:
        loaded = np.load(args.inputs)
        feeds.update({k: loaded[k] for k in loaded.files})
    names = [o.name for o in cpu_sess.get_outputs()]
    got = ep_sess.run(names, feeds)
    want = cpu_sess.run(names, feeds)
    worst = 0.0
    for name, g, w in zip(names, got, want, strict=True):
        if g.shape != w.shape:
            print(f"{name}: shape {g.shape} on the EP, {w.shape} on ORT CPU")
            return 1
        diff = float(np.max(np.abs(g.astype(np.float64) - w.astype(np.float64)))) if g.size else 0.0
        worst = max(worst, diff)
        print(f"{name}: shape {tuple(g.shape)} max |EP - CPU| = {diff:.3g}")
    print(f"largest difference: {worst:.3g}")
    return 0 if worst <= args.tolerance else 1


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="hipdnn-ep", description=f"Tools for the {get_ep_name()} ONNX Runtime EP.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("doctor", help="versions of the wheels and ORT, ABI verdict, devices, cache dir")
    c = sub.add_parser("compile", help="compile a model ahead of time into an EPContext model")
    c.add_argument("model")
    c.add_argument("-o", "--output", help="EPContext model path (default: MODEL_ctx.onnx)")
    c.add_argument("--embed", action="store_true", help="embed the artifacts in the model")
    c.add_argument("--option", action="append", default=[], metavar="KEY=VALUE", help="EP option")
    r = sub.add_parser("run", help="run a model on the EP and on ORT's CPU EP and compare")
    r.add_argument("model")
    r.add_argument("--dim", action="append", default=[], metavar="NAME=SIZE", help="size of a symbolic dim")
    r.add_argument("--inputs", help=".npz file with some or all inputs")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--tolerance", type=float, default=1e-4)
    r.add_argument("--no-fallback", action="store_true", help="fail if a node would run on the CPU EP")
    r.add_argument("--option", action="append", default=[], metavar="KEY=VALUE", help="EP option")
    b = sub.add_parser("bench", help="LLM prefill/decode speed on this EP and ORT's EPs, with the bandwidth floor")
    from . import bench  # noqa: PLC0415

    bench.add_arguments(b)
    args = ap.parse_args(argv)
    return {"doctor": cmd_doctor, "compile": cmd_compile, "run": cmd_run, "bench": bench.run}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
