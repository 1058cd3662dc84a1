"""Which nodes of a graph the compiler can compile, and why not: the support query.

The answer comes from the compiler itself, not from a table kept beside it: the graph goes
through the same frontend, passes and lowering that `compile_model` runs (everything but writing
the object and linking it), so every rule (op registry, element-type tables of the ABI manifest,
constant-parameter requirements, shape checks) decides support exactly as it decides a compile.

A refusal names the node it is about; that node is taken out (its outputs become graph inputs,
as they are when the node runs on another execution provider) and the rest is tried again,
until what is left compiles. A refusal that names no node refuses every remaining node.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import onnx

from .errors import CompileError
from .frontend.importer import node_label
from .ops import lookup


@dataclass(frozen=True)
class NodeVerdict:
    """The verdict on node `index` of the graph (its position in graph.node)."""

    index: int
    name: str
    op_type: str
    domain: str
    supported: bool
    reason: str = ""

    def to_json(self) -> dict:
        out = {"index": self.index, "name": self.name, "op_type": self.op_type, "domain": self.domain,
               "supported": self.supported}
        if not self.supported:
            out["reason"] = self.reason
        return out


def _static_reason(node: onnx.NodeProto) -> str:
    """A refusal decided by the node alone, without compiling."""
    if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
        return ""
    if lookup(node.domain, node.op_type) is None:
        return f"op {node.op_type} of domain {node.domain or 'ai.onnx'} is not supported"
    if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute):
        return "nodes with subgraphs are not supported"
    return ""


def _without(model: onnx.ModelProto, refused: set[int]) -> tuple[onnx.ModelProto, list[int]]:
    """`model` without the refused nodes: their outputs become graph inputs, graph outputs that
    only they produce are dropped. Also returns the original index of each remaining node."""
    g = model.graph
    kept = [i for i in range(len(g.node)) if i not in refused]
    types = {vi.name: vi for vi in list(g.input) + list(g.value_info) + list(g.output)}
    cut = [o for i in sorted(refused) for o in g.node[i].output if o]
    out = onnx.ModelProto()
    out.CopyFrom(model)
    del out.graph.node[:]
    out.graph.node.extend(g.node[i] for i in kept)
    produced = {o for n in out.graph.node for o in n.output} | {i.name for i in g.input} | \
        {t.name for t in g.initializer}
    new_inputs = [types[name] for name in cut if name in types and name not in produced]
    out.graph.input.extend(new_inputs)
    outputs = [o for o in out.graph.output if o.name in produced]
    # what the refused nodes read from the kept ones leaves the graph, as it leaves a partition
    made = {o for n in out.graph.node for o in n.output}
    listed = {o.name for o in outputs}
    for i in sorted(refused):
        for name in g.node[i].input:
            if name in made and name not in listed and name in types:
                outputs.append(types[name])
                listed.add(name)
    del out.graph.output[:]
    out.graph.output.extend(outputs)
    # inputs only refused nodes read are no longer inputs
    read = {i for n in out.graph.node for i in n.input} | {o.name for o in outputs}
    inputs = [i for i in out.graph.input if i.name in read]
    del out.graph.input[:]
    out.graph.input.extend(inputs)
    return out, kept


def _untyped_readers(model: onnx.ModelProto, refused: set[int]) -> dict[int, str]:
    """The kept nodes that read an output of a refused node whose type the graph does not declare (onnx infers
    none for some ops): that value cannot become an input of the reduced model, so its readers are refused too,
    saying why (an EP's graph always has the types; a bare model may not)."""
    g = model.graph
    typed = {vi.name for vi in list(g.input) + list(g.value_info) + list(g.output)} | {t.name for t in g.initializer}
    untyped = {o: i for i in sorted(refused) for o in g.node[i].output if o and o not in typed}
    found = {}
    for j, node in enumerate(g.node):
        name = next((n for n in node.input if n in untyped), None) if j not in refused else None
        if name is not None:
            producer = untyped[name]
            found[j] = (f"input '{name}' is an output of {node_label(g.node[producer], producer)}, which is not "
                        f"supported, and the model declares no type for it")
    return found


def _blamed(message: str, model: onnx.ModelProto, kept: list[int]) -> tuple[set[int], str]:
    """The original indices of the nodes a refusal of the reduced `model` is about, and the
    reason without the node's label."""
    g = model.graph
    for pos, node in enumerate(g.node):
        label = node_label(node, pos)
        if message.startswith(label + ": "):
            return {kept[pos]}, message[len(label) + 2:]
    for kind, side in (("graph input", "input"), ("graph output", "output")):
        prefix = f"{kind} '"
        if message.startswith(prefix) and "': " in message:
            name, reason = message[len(prefix):].split("': ", 1)
            hit = {kept[pos] for pos, n in enumerate(g.node) if name in getattr(n, side)}
            if hit:
                return hit, reason
    return set(kept), message


def _copy_external_data(model: onnx.ModelProto, base: Path, folder: Path) -> None:
    """Copies the model's external data files beside the reduced models (the ONNX checker refuses
    links to them)."""
    for t in model.graph.initializer:
        for e in t.external_data:
            src, dst = base / e.value, folder / e.value
            if e.key == "location" and "/" not in e.value and src.is_file() and not dst.exists():
                shutil.copyfile(src, dst)


def _check_path(path: Path, target, key: str | None = None) -> None:
    """Runs everything compile_model runs up to (not including) object emission. With `key` (see
    compiler.lowering_key), the result is kept for a compile of the same bytes that follows."""
    from .compiler import lower_model

    lower_model(path, target, key, keep=key is not None)


def _check(model: onnx.ModelProto, folder: Path, target) -> None:
    path = folder / "support.onnx"
    onnx.save(model, str(path))
    try:
        _check_path(path, target)
    finally:
        path.unlink(missing_ok=True)


def _typed(model: onnx.ModelProto) -> onnx.ModelProto:
    """model with the types of its intermediates inferred: a refusal turns some into graph inputs.  Only
    computed once a node is refused (a whole-model pass needs none, and it costs a copy of the weights)."""
    try:
        return onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001 - the checks report what is wrong with the model
        return model


def check_support(model_or_path: onnx.ModelProto | str | Path, backend: str = "cpu",
                  abi: str | tuple[int, int] | None = None,
                  manifest: str | Path | None = None) -> list[NodeVerdict]:
    """One verdict per node of the model, in graph order (see the module docstring)."""
    from .abi import load_abi
    from .artifact import BACKENDS
    from .compiler import lowering_key
    from .errors import ModelError

    if backend not in BACKENDS:
        raise CompileError(f"unknown backend '{backend}' (choose from {', '.join(BACKENDS)})")
    target = load_abi(manifest, abi)
    if isinstance(model_or_path, onnx.ModelProto):
        model, base = model_or_path, None
    else:
        base = Path(model_or_path).parent
        try:
            model = onnx.load(str(model_or_path), load_external_data=False)
        except FileNotFoundError:
            raise ModelError(f"model file not found: {model_or_path}") from None
        except Exception as exc:
            raise ModelError(f"{model_or_path}: not a readable ONNX model ({exc})") from exc
    nodes = model.graph.node
    reasons: dict[int, str] = {}
    for i, node in enumerate(nodes):
        why = _static_reason(node)
        if why:
            reasons[i] = why
    with tempfile.TemporaryDirectory(prefix="hipdnn-ep-support-") as tmp:
        folder = Path(tmp)
        if reasons:
            model = _typed(model)
        if base is not None and reasons:
            _copy_external_data(model, base, folder)
        while len(reasons) < len(nodes):
            try:
                if not reasons and base is not None:  # the model as given: no copy, kept for its compile
                    reduced, kept = model, list(range(len(nodes)))
                    _check_path(Path(model_or_path), target, lowering_key(model_or_path, manifest, abi))
                else:
                    while untyped := _untyped_readers(model, set(reasons)):
                        reasons.update(untyped)
                    if len(reasons) == len(nodes):
                        break
                    reduced, kept = _without(model, set(reasons))
                    _check(reduced, folder, target)
                break
            except Exception as exc:  # noqa: BLE001 - any refusal, or a compiler bug, refuses nodes, never the graph
                message = str(exc) if isinstance(exc, CompileError) else \
                    f"internal compiler error ({type(exc).__name__}: {(str(exc).splitlines() or [''])[0]})"
                blamed, reason = _blamed(message, reduced, kept)
                if not reasons:  # the first refusal: the reduced models need the intermediates' types
                    model = _typed(model)
                    nodes = model.graph.node
                    if base is not None:
                        _copy_external_data(model, base, folder)
                for i in blamed:
                    reasons[i] = reason
    return [NodeVerdict(i, n.name, n.op_type, n.domain, i not in reasons, reasons.get(i, ""))
            for i, n in enumerate(nodes)]
