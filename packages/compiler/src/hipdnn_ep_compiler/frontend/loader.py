"""Load an ONNX model, validate it and run ONNX shape inference with data propagation."""

from __future__ import annotations

import math
from pathlib import Path

import onnx
import onnx.checker
import onnx.defs
import onnx.helper
import onnx.shape_inference
from onnx import version_converter

from ..errors import ModelError
from ..weights import constant_value, held_by_host

MIN_OPSET = 13
MISSING_SHAPE = "Field 'shape' of 'type' is required but missing"


def ai_onnx_opset(model: onnx.ModelProto) -> int:
    for imp in model.opset_import:
        if imp.domain in ("", "ai.onnx"):
            return imp.version
    raise ModelError("model imports no ai.onnx opset")


def load_model(model_or_path: onnx.ModelProto | str | Path) -> tuple[onnx.ModelProto, Path | None]:
    """The validated, shape-inferred model and the directory its external data is relative to.

    External data is NOT loaded: weights are referenced by location, never copied.
    """
    base_dir: Path | None = None
    if isinstance(model_or_path, onnx.ModelProto):
        model = model_or_path
    else:
        path = Path(model_or_path)
        base_dir = path.parent
        try:
            model = onnx.load(str(path), load_external_data=False)
        except FileNotFoundError:
            raise ModelError(f"model file not found: {path}") from None
        except Exception as exc:  # protobuf raises DecodeError and friends
            raise ModelError(f"{path}: not a readable ONNX model ({exc})") from exc

    opset = ai_onnx_opset(model)
    newest = onnx.defs.onnx_opset_version()
    original = model
    if opset < MIN_OPSET:
        model = _converted(model, opset)
    if opset > newest:
        raise ModelError(f"model uses ai.onnx opset {opset}, newer than this onnx package knows ({newest})")
    if len(model.graph.node) == 0:
        raise ModelError("model graph has no nodes")
    if len(model.graph.output) == 0:
        raise ModelError("model graph has no outputs (a model computes at least one)")

    # contrib ops: another domain, or an op ONNX does not define that onnxruntime registers in the
    # default domain (SimplifiedLayerNormalization in onnxruntime-genai's models)
    uses_contrib = any(n.domain not in ("", "ai.onnx") or (isinstance(n.op_type, str) and not onnx.defs.has(n.op_type))
                       for n in model.graph.node)
    try:
        # from a path, the checker resolves external data next to the model file; weights held by
        # the host are in no file: the checker sees them as the typed inputs they are at run time
        if held_by_host(model):
            onnx.checker.check_model(_host_weights_as_inputs(model))
        else:
            onnx.checker.check_model(str(path) if base_dir is not None else model)
    except onnx.checker.ValidationError as exc:
        # A graph input or output without a shape is what the EP writes for a value whose shape
        # onnxruntime does not know (its API reports rank 0 for it, as for a scalar); the checker
        # demands a shape there, shape inference and the importer decide what such a value allows.
        # (the checker reads the file, the original model before a version conversion)
        shapeless_io = any(v.type.HasField("tensor_type") and not v.type.tensor_type.HasField("shape")
                           for v in [*original.graph.input, *original.graph.output])
        if not uses_contrib and not (shapeless_io and MISSING_SHAPE in str(exc)):
            raise ModelError(f"model fails the ONNX checker: {_first_line(exc)}") from exc
    except UnicodeDecodeError as exc:  # the checker's message quotes a damaged (non-UTF-8) name or string
        raise ModelError("model fails the ONNX checker: a name or string in the model is not valid UTF-8 "
                         "(the file is damaged)") from exc

    # onnx's MeanVarianceNormalization function body fails strict inference (onnx 1.23: its Constant of the
    # axes attribute); inference without strict mode leaves that op's result to refine-shapes
    lenient = uses_contrib or any(n.op_type in _LENIENT_OPS and n.domain in ("", "ai.onnx") for n in model.graph.node)

    def infer(m: onnx.ModelProto) -> onnx.ModelProto:
        inferred = onnx.shape_inference.infer_shapes(_without_weight_data(m), strict_mode=not lenient,
                                                     data_prop=True)
        return _with_inferred_types(m, inferred)

    try:
        model = infer(model)
    except Exception as exc:  # InferenceError, or a checker error raised through inference
        # Declared shapes are hints that inference checks; a producer may have declared wrong ones
        # (onnxruntime 1.23's graph API reports a value it has no shape for as rank 0, a scalar).
        # Inference is the source of truth: retry without the intermediates' and outputs' shapes.
        try:
            model = infer(_without_declared_shapes(model))
        except Exception:
            raise ModelError(f"ONNX shape inference failed: {_first_line(exc)}") from exc
    return model, base_dir


_LENIENT_OPS = ("MeanVarianceNormalization",)
SMALL_INT_CONSTANT = 1024  # as the importer: int32/int64 constants up to this many elements are embedded


def _converted(model: onnx.ModelProto, opset: int) -> onnx.ModelProto:
    """A model of an opset before MIN_OPSET converted by onnx's version converter, or a ModelError.

    The converter turns some attributes into inputs (Dropout's ratio, Clip's min/max, Pad's value):
    constants the original model does not have.  A small integer one is embedded in the program; any
    other would be a weight the caller (the EP, `load_weights`) cannot find by name, so such a model is
    refused, except for Dropout's ratio, which inference does not read (the input is dropped).
    """
    why = f"model uses ai.onnx opset {opset}; hipdnn-ep-compiler needs opset {MIN_OPSET} or newer"
    try:
        converted = version_converter.convert_version(model, MIN_OPSET)
    except Exception as exc:  # the converter raises RuntimeError, ValueError, InferenceError...
        raise ModelError(f"{why}, and onnx's version converter could not convert it: {_first_line(exc)}") from exc
    g = model.graph
    known = ({t.name for t in g.initializer} | {v.name for v in g.input}
             | {o for n in g.node for o in n.output})
    added = {t.name: t for t in converted.graph.initializer if t.name not in known}
    added.update({n.output[0]: constant_value(n) for n in converted.graph.node
                  if n.op_type == "Constant" and n.domain in ("", "ai.onnx") and n.output[0] not in known})
    for node in converted.graph.node:
        if node.op_type == "Dropout" and len(node.input) > 1 and node.input[1] in added:
            node.input[1] = ""  # the ratio: unused in inference
    used = {i for n in converted.graph.node for i in n.input} | {o.name for o in converted.graph.output}
    for name, tensor in added.items():
        small_int = (tensor is not None and tensor.data_type in (onnx.TensorProto.INT32, onnx.TensorProto.INT64)
                     and math.prod(tensor.dims) <= SMALL_INT_CONSTANT)
        if name in used and not small_int:
            raise ModelError(f"{why}; onnx's version converter turned an attribute into the constant input "
                             f"'{name}', which is not in the model (convert the model to opset {MIN_OPSET} "
                             "with onnx.version_converter and save it)")
    return converted


def _host_weights_as_inputs(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy whose external initializers (held by the host: no data here) are typed graph inputs."""
    checked = onnx.ModelProto()
    checked.CopyFrom(model)  # small: no weight data in it
    g = checked.graph
    host = [t for t in g.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
    listed = {i.name for i in g.input}
    kept = [t for t in g.initializer if t.data_location != onnx.TensorProto.EXTERNAL]
    del g.initializer[:]
    g.initializer.extend(kept)
    g.input.extend(onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
                   for t in host if t.name not in listed)
    return checked


# Initializers with more elements than this are given to ONNX shape inference as typed graph inputs:
# inference would otherwise copy every weight twice (serialized in, parsed back: about 0.5 s for
# BERT-base in float16), and no shape rule reads the values of a tensor this large.
INFERENCE_DATA_LIMIT = 4096


def _elements(t: onnx.TensorProto) -> int:
    n = 1
    for d in t.dims:
        n *= d
    return n


def _without_weight_data(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model for shape inference: its large initializers held in this process become typed inputs."""
    large = [t for t in model.graph.initializer
             if t.data_location != onnx.TensorProto.EXTERNAL and _elements(t) > INFERENCE_DATA_LIMIT]
    if not large:
        return model
    skeleton = onnx.ModelProto()
    _copy_fields(model, skeleton, skip="graph")
    _copy_fields(model.graph, skeleton.graph, skip="initializer")
    g = skeleton.graph
    names = {t.name for t in large}
    g.initializer.extend(t for t in model.graph.initializer if t.name not in names)
    listed = {i.name for i in g.input}
    g.input.extend(onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
                   for t in large if t.name not in listed)
    return skeleton


def _copy_fields(src, dst, skip: str) -> None:
    """Every field of message src that is set, but `skip`, copied into dst."""
    for fd, value in src.ListFields():
        if fd.name == skip:
            continue
        if fd.is_repeated if hasattr(fd, "is_repeated") else fd.label == fd.LABEL_REPEATED:  # protobuf 7 / older
            getattr(dst, fd.name).extend(value)
        elif fd.type == fd.TYPE_MESSAGE:
            getattr(dst, fd.name).CopyFrom(value)
        else:
            setattr(dst, fd.name, value)


def _with_inferred_types(model: onnx.ModelProto, inferred: onnx.ModelProto) -> onnx.ModelProto:
    """The inferred model with model's initializers and graph inputs (a new model: `model` may be the
    caller's)."""
    if len(inferred.graph.initializer) == len(model.graph.initializer):
        return inferred  # nothing was left out
    g = inferred.graph
    del g.initializer[:]
    g.initializer.extend(model.graph.initializer)
    del g.input[:]
    g.input.extend(model.graph.input)
    return inferred


def _without_declared_shapes(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy without value_info and without the graph outputs' shapes (element types stay)."""
    stripped = onnx.ModelProto()
    stripped.CopyFrom(model)
    del stripped.graph.value_info[:]
    for out in stripped.graph.output:
        if out.type.HasField("tensor_type"):
            out.type.tensor_type.ClearField("shape")
    return stripped


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
