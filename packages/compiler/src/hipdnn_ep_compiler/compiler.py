"""compile_model: ONNX model -> artifact directory (program.so with embedded metadata)."""

from __future__ import annotations

import ctypes
import hashlib
import json
import tempfile
import threading
from collections import OrderedDict
from pathlib import Path
from typing import NamedTuple

import onnx

from . import ir as hir
from . import symbolic as sym
from . import weights as wmod
from ._version import __version__
from .abi import RuntimeAbi, load_abi
from .artifact import BACKENDS, FORMAT, PROGRAM, ArtifactInfo, check_runtime_reads, check_written
from .build_id import build_id
from .errors import AbiTargetError, CompileError, UnsupportedError
from .frontend import load_model
from .frontend.importer import dim_spelling, import_model
from .link import link_shared_object
from .lowering import lower_to_llvm
from .lowering.to_llvm import add_metadata_global
from .passes import run_pipeline
from .passes.plan_memory import ALIGNMENT as PLAN_ALIGNMENT
from .passes.plan_memory import size_bytes, storage


def _weight_types(module) -> dict[str, tuple[int, list[int]]]:
    out = {}
    for op in hir.ops(module):
        if op.name == "hipdnn.weight":
            out[hir.get_str(op, "name")] = (hir.element_dtype(op.results[0]),
                                            [int(d) for d in hir.dims_of(op.results[0])])
    return out


def _pool_buffers(module) -> list[dict]:
    """Every intermediate placed in the pool: the node that produces it, offset and size in bytes."""
    out = []
    offsets = hir.pool_offsets(module)
    for op in hir.ops(module):
        for k, result in enumerate(op.results):
            if storage(op, k) == "pool":
                out.append({"producer": hir.get_str(op, "onnx.node", op.name),
                            "offset": _int_or_expr(offsets[result]),
                            "bytes": _int_or_expr(size_bytes(result))})
    return out


def _int_or_expr(e: sym.Expr) -> int | str:
    """How the metadata spells a size: an int when static, else the expression's text."""
    return e if isinstance(e, int) else sym.to_str(e)


def _io_dtype_minor(signature: dict, wtypes: dict, abi: RuntimeAbi) -> int:
    """The ABI minor from which the runtime knows every element type of the graph's inputs, outputs and
    weights (a tensor the program passes on untouched, an Identity of UINT16, calls no kernel that would
    note it); a type newer than the target is refused, naming the tensor."""
    found = [(f"graph input '{t['name']}'", t["dtype"]) for t in signature["inputs"]]
    found += [(f"graph output '{t['name']}'", t["dtype"]) for t in signature["outputs"]]
    found += [(f"weight '{name}'", dtype) for name, (dtype, _) in wtypes.items()]
    minor = 0
    for what, code in found:
        name = hir.DTYPE_NAMES.get(code, str(code))
        since = abi.enum_since.get((f"{abi.prefix}_dtype", name.upper()), 0)
        if since > abi.target_minor:
            raise AbiTargetError(f"{what} has element type {name}, which runtime ABI {abi.major}.{since} added; the "
                                 f"target ABI is {abi.major}.{abi.target_minor}. Fix: target ABI "
                                 f"{abi.major}.{since} or newer (with a hipdnn-ep-runtime>={abi.major}.{since} "
                                 "installed)")
        minor = max(minor, since)
    return minor


def build_metadata(model: onnx.ModelProto, module, lowered, abi: RuntimeAbi, backend: str) -> dict:
    """The artifact's metadata (call under the lowering's symbol scope: Lowered.scope)."""
    signature = hir.get_json(hir.main_func(module), "hipdnn.signature")
    imports = [abi.functions[n] for n in lowered.imports]
    wtypes = _weight_types(module)
    # a graph output's dims are those the program computes: ONNX Runtime treats declared output shapes as
    # hints (it warns where the run differs), and onnx's inference writes wrong ones (dim 0 for a dim it
    # cannot compute over symbolic dims; pool sizes under ceil_mode by an older rule); their names stay
    outputs = []
    for o, refined in zip(signature["outputs"], lowered.output_dims, strict=False):
        dims = [int(d) if d.lstrip("-").isdigit() else d for d in refined]
        names = o["dims"] if o["dims"] is not None and len(o["dims"]) == len(dims) else None
        outputs.append(dim_spelling({"name": o["name"], "dtype": o["dtype"]}, dims, names))
    meta = {
        "format": FORMAT,
        "compiler": {"name": "hipdnn-ep-compiler", "version": __version__, "build_id": build_id()},
        "backend": backend,
        # every function, element type and enum value the program uses exists from min_minor on
        "abi": {"major": abi.major, "min_minor": max([f.since for f in imports] +
                                                     [lowered.min_minor, _io_dtype_minor(signature, wtypes, abi)])},
        "imports": [{"name": f.name, "hash": f.hash, "since": f.since} for f in imports],
        "inputs": signature["inputs"],
        "outputs": outputs,
        "weights": wmod.describe_all(model, lowered.weights, [wtypes[n] for n in lowered.weights]),
        "memory_plan": {
            # an int when static, else an expression over input dims d<input>_<axis> (see README)
            "pool_bytes": _int_or_expr(lowered.pool_size or 0),
            "host_scratch_bytes": 8 * lowered.host_scratch_slots,
            "alignment": PLAN_ALIGNMENT,
            "buffers": _pool_buffers(module),
        },
        # shape relations the program verifies before sizing anything, in order (the runtime names the
        # first one that fails); values are ints or expressions like memory_plan's
        "checks": [c.to_json() for c in lowered.checks],
        # the node of each runtime kernel call, in call order: a failing call's error names its node
        "kernel_nodes": lowered.kernel_nodes,
        "graph_hash": hashlib.sha256(model.graph.SerializeToString(deterministic=True)).hexdigest(),
    }
    named = _named_symbols(module, lowered)
    if named:  # only where an expression grew past symbolic.MAX_NODES (so most metadata reads as before)
        meta["symbols"] = named
    return meta


def _named_symbols(module, lowered) -> list[dict]:
    """The definitions of the named symbols (symbolic.py) the metadata's expressions use, each after the
    ones it uses: {"name": "s3", "value": "(max (add -1 s2) 0)"}."""
    exprs = [d for v in hir.ops(module)[-1].operands for d in hir.dims_of(v)]
    exprs += [v for c in lowered.checks for v in c.values]
    exprs += [lowered.pool_size or 0, *hir.pool_offsets(module).values()]
    exprs += [size_bytes(r) for op in hir.ops(module) for k, r in enumerate(op.results) if storage(op, k) == "pool"]
    return [{"name": n, "value": sym.to_str(d)} for n, d in sym.definitions(exprs)]


def emit_object(module: hir.ir.Module, imports: list[str], object_path: Path) -> None:
    """Translate the LLVM-dialect module to a PIC object file (one LLVM, end to end)."""
    from torch_mlir.execution_engine import ExecutionEngine

    engine = ExecutionEngine(module, opt_level=2, enable_pic=True)
    # The runtime is not loaded at compile time: placeholder addresses make the imports
    # resolvable so the object can be written; they stay ordinary undefined references.
    placeholders = []
    for k, name in enumerate(imports):
        placeholders.append(ctypes.c_void_p(0x1000 + 16 * k))
        engine.raw_register_runtime(name, placeholders[-1])
    engine.dump_to_object_file(str(object_path))
    if not object_path.exists():
        raise RuntimeError("internal error: the execution engine wrote no object file")


class Lowered(NamedTuple):
    """The front half of a compile: the shape-inferred model, the planned module, its host program."""

    model: onnx.ModelProto
    module: object
    lowered: object
    scope: sym.Scope  # the named shape symbols its expressions use


# Lowered models kept by key (see lower_model): the EP asks whether a subgraph is supported, which
# runs everything but object emission, then compiles those same bytes. A few are kept, each
# taken (and dropped) by the compile that follows; a long-lived compiler process never grows.
_KEPT_MAX = 4
_kept: OrderedDict[str, Lowered] = OrderedDict()
_kept_lock = threading.Lock()  # compile_model and check_support may be called from several threads


def lowering_key(path: str | Path, manifest: str | Path | None, abi: str | tuple[int, int] | None) -> str | None:
    """What the front half of a compile depends on, as a digest: the model file's bytes, the name and
    size of each external data file it references (the ONNX checker reads them), the manifest's bytes
    and the target ABI. None when a file cannot be read (the compile then reports it)."""
    h = hashlib.sha256(b"lowering 1\0")
    try:
        data = Path(path).read_bytes()
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)  # the same digest as of the two joined, without a copy of the file
        external = set()
        if b"location" in data:  # only models with external data name one
            proto = onnx.load_from_string(data)
            external = {e.value for t in proto.graph.initializer for e in t.external_data if e.key == "location"}
        for name in sorted(external):
            f = Path(path).parent / name
            h.update(f"\0{name}\0{f.stat().st_size if f.is_file() else -1}".encode())
        h.update(b"\0" + (Path(manifest).read_bytes() if manifest is not None else b"bundled"))
    except Exception:  # noqa: BLE001 - unreadable or not a model: nothing is kept, the compile says why
        return None
    h.update(f"\0{abi}".encode())
    return h.hexdigest()


def lower_model(model_or_path: onnx.ModelProto | str | Path, target: RuntimeAbi, key: str | None = None,
                keep: bool = False) -> Lowered:
    """Load, import, run the pass pipeline and lower to the host program. A result kept under `key`
    (by lowering_key) is taken instead of computing it again; keep=True keeps this one under `key`."""
    if key is not None:
        with _kept_lock:
            found = _kept.get(key) if keep else _kept.pop(key, None)
            if found is not None:
                if keep:
                    _kept.move_to_end(key)
                return found
    model, _ = load_model(model_or_path)
    with sym.use_scope() as scope:
        module = import_model(model)
        try:
            run_pipeline(module, abi=target)
            result = Lowered(model, module, lower_to_llvm(module, target), scope)
        except sym.ShapeBoundError as exc:  # past refine-shapes, which names the node
            raise UnsupportedError(str(exc)) from None
    if keep and key is not None:
        with _kept_lock:
            _kept[key] = result
            while len(_kept) > _KEPT_MAX:
                _kept.popitem(last=False)
    return result


def compile_model(model_or_path: onnx.ModelProto | str | Path, out_dir: str | Path, backend: str = "cpu",
                  abi: str | tuple[int, int] | None = None, manifest: str | Path | None = None) -> ArtifactInfo:
    """Compile an ONNX model into the artifact directory `out_dir` and return its description.

    backend: "cpu", "cuda" or "hip" (recorded; the runtime picks kernels per backend).
    abi: target runtime ABI "MAJOR.MINOR" (default: the newest this compiler knows).
    manifest: a runtime ABI manifest JSON to compile against (default: the bundled one).
    """
    if backend not in BACKENDS:
        raise CompileError(f"unknown backend '{backend}' (choose from {', '.join(BACKENDS)})")
    target = load_abi(manifest, abi)
    check_runtime_reads(target.artifact, target.source)
    key = None if isinstance(model_or_path, onnx.ModelProto) else lowering_key(model_or_path, manifest, abi)
    model, module, lowered, scope = lower_model(model_or_path, target, key)
    with sym.use_scope(scope), hir.reading_shapes():
        meta = build_metadata(model, module, lowered, target, backend)
    check_written(meta)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    # the metadata global is the module's only for this object: a kept lowering stays as lowered
    meta_global = add_metadata_global(lowered.module, json.dumps(meta, separators=(",", ":")))
    try:
        with tempfile.TemporaryDirectory(prefix="hipdnn-ep-compile-") as tmp:
            obj = Path(tmp) / "program.o"
            emit_object(lowered.module, lowered.imports, obj)
            link_shared_object(obj, out / PROGRAM, target)
    finally:
        meta_global.erase()
    return ArtifactInfo(out, meta)
