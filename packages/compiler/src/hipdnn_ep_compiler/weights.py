"""Weights by reference: describe them for the metadata, and load them for a run.

The artifact never contains weights (only small integer constants).  Its metadata lists each
weight with a source: {"kind": "external", "location", "offset", "length"} for ONNX external
data (relative to the model's directory), {"kind": "inline"} for data stored inside the
model (an initializer or a Constant node), looked up by name in the model, or {"kind": "host"}
for a weight the program's host holds.

A model whose property HOST_WEIGHTS_KEY is HOST_WEIGHTS_VALUE (what hipdnn-ep writes for the
subgraphs it compiles) holds its external data nowhere: the host (onnxruntime) passes its own
tensors to the program at run time, so the compiler, which never reads weight values, gets only
their names, element types and dims.  No file is written, copied or read for them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ml_dtypes  # onnx depends on it: its arrays of BFLOAT16 and FLOAT8 tensors
import numpy as np
import onnx
from onnx import numpy_helper

from .artifact import read_metadata
from .dtypes import DTYPES
from .errors import ArtifactError

_NUMPY = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32, 7: np.int64, 9: np.bool_,
          10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64,
          16: ml_dtypes.bfloat16, 17: ml_dtypes.float8_e4m3fn, 18: ml_dtypes.float8_e4m3fnuz,
          19: ml_dtypes.float8_e5m2, 20: ml_dtypes.float8_e5m2fnuz}


HOST_WEIGHTS_KEY = "hipdnn_ep.weights"
HOST_WEIGHTS_VALUE = "host"


def held_by_host(model: onnx.ModelProto) -> bool:
    """Whether the model's external data is held by the program's host (no file holds it)."""
    return any(p.key == HOST_WEIGHTS_KEY and p.value == HOST_WEIGHTS_VALUE for p in model.metadata_props)


def _tensors_by_name(model: onnx.ModelProto) -> dict[str, onnx.TensorProto]:
    found = {t.name: t for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
            tensor = constant_value(node)
            if tensor is not None:
                found.setdefault(node.output[0], tensor)
    return found


def constant_value(node: onnx.NodeProto) -> onnx.TensorProto | None:
    """A Constant node's value as a tensor (value, value_int(s), value_float(s)); None for other kinds."""
    attrs = {a.name: a for a in node.attribute}
    if "value" in attrs:
        return attrs["value"].t
    if "value_int" in attrs:
        return numpy_helper.from_array(np.array(attrs["value_int"].i, dtype=np.int64))
    if "value_ints" in attrs:
        return numpy_helper.from_array(np.array(list(attrs["value_ints"].ints), dtype=np.int64))
    if "value_float" in attrs:
        return numpy_helper.from_array(np.array(attrs["value_float"].f, dtype=np.float32))
    if "value_floats" in attrs:
        return numpy_helper.from_array(np.array(list(attrs["value_floats"].floats), dtype=np.float32))
    return None


def describe(name: str, tensor: onnx.TensorProto | None, dtype: int, dims: list[int],
             host: bool = False) -> dict[str, Any]:
    """The metadata entry of one weight (host: the model's external data is held by the host)."""
    source: dict[str, Any] = {"kind": "inline"}
    if tensor is not None and tensor.data_location == onnx.TensorProto.EXTERNAL and host:
        source = {"kind": "host"}
    elif tensor is not None and tensor.data_location == onnx.TensorProto.EXTERNAL:
        info = {e.key: e.value for e in tensor.external_data}
        n = int(np.prod(dims)) if dims else 1
        source = {"kind": "external", "location": info["location"], "offset": int(info.get("offset", 0)),
                  "length": int(info.get("length", n * DTYPES[dtype][1]))}
    return {"name": name, "dtype": dtype, "dims": list(dims), "source": source}


def describe_all(model: onnx.ModelProto, names: list[str], dtypes_dims: list[tuple[int, list[int]]]) -> list[dict]:
    tensors = _tensors_by_name(model)
    host = held_by_host(model)
    return [describe(n, tensors.get(n), dt, dims, host) for n, (dt, dims) in zip(names, dtypes_dims, strict=False)]


def load_weights(artifact_or_metadata: str | Path | dict, model: str | Path | onnx.ModelProto,
                 base_dir: str | Path | None = None) -> list[np.ndarray]:
    """The weight arrays of an artifact, in metadata order; external data is memory-mapped."""
    meta = artifact_or_metadata if isinstance(artifact_or_metadata, dict) else read_metadata(artifact_or_metadata)
    if isinstance(model, onnx.ModelProto):
        proto = model
        base = Path(base_dir) if base_dir is not None else None
    else:
        proto = onnx.load(str(model), load_external_data=False)
        base = Path(base_dir) if base_dir is not None else Path(model).parent
    tensors = _tensors_by_name(proto)
    arrays = []
    for w in meta["weights"]:
        np_dtype = _NUMPY[w["dtype"]]
        src = w["source"]
        if src["kind"] == "host":
            raise ArtifactError(f"weight '{w['name']}' is held by the program's host: the compiled model carried "
                                "no data for it (compile a model that holds its weights to load them here)")
        if src["kind"] == "external":
            if base is None:
                raise ArtifactError(f"weight '{w['name']}' is external data: pass base_dir")
            arr = np.memmap(base / src["location"], dtype=np_dtype, mode="r", offset=src["offset"],
                            shape=tuple(w["dims"]))
        else:
            tensor = tensors.get(w["name"])
            if tensor is None:
                raise ArtifactError(f"weight '{w['name']}' is not in the model")
            arr = numpy_helper.to_array(tensor).astype(np_dtype, copy=False).reshape(w["dims"])
        arrays.append(arr)
    return arrays
