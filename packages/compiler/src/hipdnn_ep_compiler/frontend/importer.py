"""Import a shape-inferred ONNX graph into the hipdnn op-level IR (see ir.py).

Each ONNX node becomes one `onnx.<name>` operation (its registry entry's; dialect.py) with the
node's inputs that are present as operands (attribute `operand_roles` lists their ONNX input
positions) and the node's attributes as `onnx.<attr>` attributes.  Graph inputs become arguments
of `func.func @main`; initializers and Constant nodes become `hipdnn.weight` (referenced, never
copied) or, for small integer tensors, `hipdnn.constant` (host values, embedded).  The IR is
built with the MLIR bindings' builders.
"""

from __future__ import annotations

import json

import numpy as np
import onnx
from onnx import numpy_helper
from torch_mlir import ir
from torch_mlir.dialects import func

from .. import dialect
from .. import ir as hir
from .. import symbolic as sym
from ..errors import ModelError, UnsupportedError
from ..ops import lookup
from ..weights import constant_value

SMALL_INT_CONSTANT = 1024  # int32/int64 tensors up to this many elements are embedded host values
SMALL_FLOAT_CONSTANT = 16  # float tensors up to this many elements also carry their values (attribute float_values)

# Normalization ops whose extra outputs (statistics) are dropped when unused and refused when used,
# except the outputs listed in _EXTRA_OUTPUTS (SkipSimplifiedLayerNormalization's input + skip sum),
# and those in _USED_OUTPUTS, imported (and computed) only when used (LayerNormalization's Mean and InvStdDev,
# BatchNormalization's running_mean/running_var in training mode, MaxPool's Indices).
_STATS_OUTPUTS = {"LayerNormalization": "Mean/InvStdDev", "SimplifiedLayerNormalization": "InvStdDev",
                  "SkipSimplifiedLayerNormalization": "mean/inv_std_var", "MaxPool": "Indices",
                  "BatchNormalization": "running_mean/running_var"}
_EXTRA_OUTPUTS = {"SkipSimplifiedLayerNormalization": (3,)}
_USED_OUTPUTS = {"LayerNormalization": (1, 2), "BatchNormalization": (1, 2), "MaxPool": (1,)}


def _attr(attr: onnx.AttributeProto, where: str) -> ir.Attribute:
    t = attr.type
    A = onnx.AttributeProto
    i64, f64 = ir.IntegerType.get_signless(64), ir.F64Type.get()
    if t == A.INT:
        return ir.IntegerAttr.get(i64, attr.i)
    if t == A.FLOAT:
        return ir.FloatAttr.get(f64, attr.f)
    if t == A.STRING:
        return ir.StringAttr.get(attr.s.decode("utf-8", "replace"))
    if t == A.INTS:
        return ir.ArrayAttr.get([ir.IntegerAttr.get(i64, v) for v in attr.ints])
    if t == A.FLOATS:
        return ir.ArrayAttr.get([ir.FloatAttr.get(f64, v) for v in attr.floats])
    if t == A.TENSOR and attr.t.data_type in hir.DTYPES and attr.t.data_location != onnx.TensorProto.EXTERNAL:
        # a small tensor value (ConstantOfShape's value): elements inline, as MLIR's dense attribute
        values = numpy_helper.to_array(attr.t)
        if values.size <= SMALL_TENSOR_ATTRIBUTE:
            return ir.DenseElementsAttr.get(np.ascontiguousarray(values))
    raise UnsupportedError(f"{where}: attribute '{attr.name}' of type {A.AttributeType.Name(t)} is not supported")


SMALL_TENSOR_ATTRIBUTE = 1024  # elements of a tensor attribute imported inline


# INT4, UINT4, FLOAT4E2M1 (and the 2-bit types): packed several to a byte, which the runtime's per-element byte
# sizes (the manifest's element_bytes) cannot state.
_SUB_BYTE = {code: " (its values are packed several to a byte; the runtime's tensors have whole-byte elements)"
             for code in (21, 22, 23, 25, 26)}


def _dtype_name(code: int) -> str:
    """ONNX's name of an element type code; a code ONNX does not define (a damaged model) by number."""
    try:
        return onnx.TensorProto.DataType.Name(code)
    except ValueError:
        return f"{code} (not an ONNX element type)"


def node_label(node: onnx.NodeProto, index: int) -> str:
    """How messages name a node: by its name, or (unnamed) by position and first output."""
    dom = f"{node.domain}::" if node.domain not in ("", "ai.onnx") else ""
    if node.name:
        return f"node '{node.name}' ({dom}{node.op_type})"
    output = next((o for o in node.output if o), None)
    return f"node #{index} ({dom}{node.op_type}" + (f" -> '{output}')" if output else ")")


class _Importer:
    def __init__(self, model: onnx.ModelProto):
        self.model = model
        self.graph = model.graph
        self.types: dict[str, onnx.TypeProto] = {}
        for vi in list(self.graph.input) + list(self.graph.value_info) + list(self.graph.output):
            self.types[vi.name] = vi.type
        self.initializers = {t.name: t for t in self.graph.initializer}
        self.constants: dict[str, onnx.TensorProto] = {}  # Constant node outputs
        self.values: dict[str, ir.Value] = {}  # onnx value name -> its IR value
        self.dtypes: dict[str, int] = {}  # onnx value name -> element type code
        self.ip: ir.InsertionPoint | None = None  # the end of @main's body

    def create(self, name: str, operands: list[ir.Value], result_types: list[ir.Type],
               attrs: dict[str, ir.Attribute]) -> ir.Operation:
        return ir.Operation.create(name, results=result_types, operands=operands, attributes=attrs, ip=self.ip)

    def tensor_type(self, name: str, where: str, fallback_dtype: int | None = None) -> tuple[int, list]:
        tp = self.types.get(name)
        if tp is None or not tp.HasField("tensor_type") or tp.tensor_type.elem_type == 0:
            if fallback_dtype is None:
                raise ModelError(f"{where}: the type of '{name}' is unknown after shape inference")
            return fallback_dtype, None
        tt = tp.tensor_type
        if tt.elem_type not in hir.DTYPES:
            raise UnsupportedError(
                f"{where}: '{name}' has element type {_dtype_name(tt.elem_type)}, "
                f"which hipdnn-ep does not support" + _SUB_BYTE.get(tt.elem_type, "")
            )
        if not tt.HasField("shape"):
            return tt.elem_type, None
        dims = []
        for d in tt.shape.dim:
            if d.HasField("dim_value"):
                if d.dim_value < 0:
                    raise ModelError(f"{where}: '{name}' has dim {d.dim_value} after shape inference (from the "
                                     "model's constants or declared shapes); dims must be >= 0")
                dims.append(d.dim_value)
            elif not isinstance(d.dim_param, str):  # protobuf hands undecodable text over as bytes
                raise ModelError(f"{where}: a dim name of '{name}' is not valid UTF-8 (the model is damaged)")
            else:
                dims.append(d.dim_param or None)
        return tt.elem_type, dims

    def operand(self, name: str, where: str) -> ir.Value:
        if name in self.values:
            return self.values[name]
        tensor = self.initializers.get(name) or self.constants.get(name)
        if tensor is None:
            raise ModelError(f"{where}: input '{name}' is produced by no node, initializer or graph input")
        dtype = tensor.data_type
        if dtype not in hir.DTYPES:
            raise UnsupportedError(f"{where}: constant '{name}' has unsupported element type "
                                   f"{_dtype_name(dtype)}")
        dims = list(tensor.dims)
        ttype = hir.tensor_type(dtype, dims)
        n = int(np.prod(dims)) if dims else 1
        external = tensor.data_location == onnx.TensorProto.EXTERNAL
        attrs = {"name": ir.StringAttr.get(name)}
        if dtype in (6, 7) and n <= SMALL_INT_CONSTANT and not external:
            values = numpy_helper.to_array(tensor).reshape(-1).tolist()
            attrs["values"] = hir.to_attr([int(v) for v in values])
            op = self.create("hipdnn.constant", [], [ttype], attrs)
        else:
            if dtype == 9 and n == 1 and not external:  # a bool flag (Dropout's training_mode): readable by rules
                attrs["bool_value"] = hir.to_attr(int(numpy_helper.to_array(tensor).reshape(-1)[0]))
            elif dtype in (1, 10, 11) and n <= SMALL_FLOAT_CONSTANT and not external:
                # small float constants (Resize's scales and roi) stay weights, their values readable by shape rules
                attrs["float_values"] = hir.to_attr([float(v) for v in numpy_helper.to_array(tensor).reshape(-1)])
            elif dtype in (2, 3) and n <= SMALL_FLOAT_CONSTANT and not external:
                # small 8-bit constants (quantization zero points) stay weights, their values readable by fuse-qdq
                attrs["int_values"] = hir.to_attr([int(v) for v in numpy_helper.to_array(tensor).reshape(-1)])
            op = self.create("hipdnn.weight", [], [ttype], attrs)
        self.values[name] = op.results[0]
        self.dtypes[name] = dtype
        return op.results[0]

    def constant_node(self, node: onnx.NodeProto, where: str) -> None:
        tensor = constant_value(node)
        if tensor is None:
            raise UnsupportedError(f"{where}: only tensor, int(s) and float(s) Constant values are supported")
        tensor = onnx.TensorProto.FromString(tensor.SerializeToString())
        tensor.name = node.output[0]
        self.constants[node.output[0]] = tensor

    def run(self, module: ir.Module) -> None:
        g = self.graph
        arg_types, inputs_meta, arg_names = [], [], []
        for vi in (x for x in g.input if x.name not in self.initializers):
            where = f"graph input '{vi.name}'"
            dtype, dims = self.tensor_type(vi.name, where)
            if dims is None:
                raise UnsupportedError(f"{where}: its rank is unknown (no shape is declared or inferred); hipdnn-ep "
                                       "compiles for a known rank (declare the input's shape: dims may be named)")
            arg_types.append(hir.tensor_type(dtype, dims))
            # the metadata spells a dynamic dim one way: d<input>_<axis>, as the checks and sizes do
            # (two inputs' dims of one ONNX name may differ); the ONNX names are labels beside them
            inputs_meta.append(dim_spelling({"name": vi.name, "dtype": dtype}, [
                d if isinstance(d, int) else sym.input_dim(len(arg_names), k) for k, d in enumerate(dims)], dims))
            arg_names.append(vi.name)
            self.dtypes[vi.name] = dtype
        with ir.InsertionPoint(module.body):
            main = func.FuncOp("main", (arg_types, []))
        entry = main.add_entry_block()
        for name, arg in zip(arg_names, entry.arguments, strict=True):
            self.values[name] = arg
        self.ip = ir.InsertionPoint(entry)
        for index, node in enumerate(g.node):
            where = node_label(node, index)
            if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
                self.constant_node(node, where)
                continue
            op = lookup(node.domain, node.op_type)
            if op is None:
                dom = node.domain or "ai.onnx"
                raise UnsupportedError(f"{where}: op {node.op_type} of domain {dom} is not supported "
                                       f"(see hipdnn_ep_compiler.supported_ops())")
            roles = [i for i, n in enumerate(node.input) if n]
            operands = [self.operand(node.input[i], where) for i in roles]
            fallback = self.dtypes[node.input[roles[0]]] if operands else None
            outputs, result_types, result_roles = [], [], []
            for k, out in enumerate(node.output):
                if not out:
                    continue
                if k > 0 and k not in _EXTRA_OUTPUTS.get(node.op_type, ()) and node.op_type in _STATS_OUTPUTS:
                    used = any(out in n.input for n in g.node) or any(out == o.name for o in g.output)
                    if not used:
                        continue
                    if k not in _USED_OUTPUTS.get(node.op_type, ()):
                        raise UnsupportedError(f"{where}: the {_STATS_OUTPUTS[node.op_type]} outputs are not supported")
                dtype, dims = self.tensor_type(out, where, fallback_dtype=fallback)
                # rank unknown: refine-shapes computes it
                result_types.append(hir.tensor_type(dtype, dims))
                outputs.append(out)
                result_roles.append(k)
                self.dtypes[out] = dtype
            attrs = {"operand_roles": hir.to_attr(roles), "onnx.node": ir.StringAttr.get(where)}
            if result_roles != list(range(len(result_roles))):  # an output left out before a used one
                attrs["result_roles"] = hir.to_attr(result_roles)
            for a in node.attribute:
                attrs["onnx." + a.name] = _attr(a, where)
            created = self.create(op.op_name, operands, result_types, attrs)
            for out, value in zip(outputs, created.results, strict=True):
                self.values[out] = value
        outs, outputs_meta = [], []
        for vi in g.output:
            where = f"graph output '{vi.name}'"
            value = self.operand(vi.name, where)
            outs.append(value)
            dtype, dims = self.tensor_type(vi.name, where, fallback_dtype=self.dtypes[vi.name])
            outputs_meta.append({"name": vi.name, "dtype": dtype, "dims": dims})
        with self.ip:
            func.ReturnOp(outs)
        main.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(arg_types, [v.type for v in outs]))
        signature = {"inputs": inputs_meta, "outputs": outputs_meta}
        main.attributes["hipdnn.signature"] = ir.StringAttr.get(json.dumps(signature))


def dim_spelling(entry: dict, dims: list, onnx_dims: list | None) -> dict:
    """A metadata tensor entry: `dims` (an int, or the expression of a dynamic dim over the program's
    input dims, e.g. "d0_1"), and `dim_names`, the ONNX names of its dims (null where none), when the
    model names some."""
    entry["dims"] = dims
    names = [d if isinstance(d, str) else None for d in onnx_dims or []]
    if any(names):
        entry["dim_names"] = names
    return entry


def import_model(model: onnx.ModelProto, context=None):
    """The hipdnn IR module for a loaded (shape-inferred) model."""
    ctx = context or hir.new_context()
    with ctx, ir.Location.unknown():
        module = ir.Module.create()
        _Importer(model).run(module)
    try:
        dialect.verify(module)
    except ValueError as exc:  # an importer bug, not a user error
        raise RuntimeError(f"internal error: the imported IR does not verify: {exc}\n{module}") from None
    return module
