"""Import a shape-inferred ONNX graph into the hipdnn op-level IR (see ir.py).

Each ONNX node becomes one generic `hipdnn.<op>` operation with the node's inputs that are
present as operands (attribute `operand_roles` lists their ONNX input positions) and the
node's attributes converted to MLIR attributes.  Graph inputs become arguments of
`func.func @main`; initializers and Constant nodes become `hipdnn.weight` (referenced, never
copied) or, for small integer tensors, `hipdnn.constant` (host values, embedded).
"""

from __future__ import annotations

import json

import numpy as np
import onnx
from onnx import numpy_helper

from .. import ir as hir
from ..errors import ModelError, UnsupportedError
from ..ops import lookup

SMALL_INT_CONSTANT = 1024  # int32/int64 tensors up to this many elements are embedded host values


def _float_literal(x: float) -> str:
    return f"{np.float64(x).view(np.uint64):#018x} : f64"


def _attr_text(attr: onnx.AttributeProto, where: str) -> str:
    t = attr.type
    A = onnx.AttributeProto
    if t == A.INT:
        return f"{attr.i} : i64"
    if t == A.FLOAT:
        return _float_literal(attr.f)
    if t == A.STRING:
        return hir.mlir_string(attr.s.decode("utf-8", "replace"))
    if t == A.INTS:
        return "[" + ", ".join(f"{v} : i64" for v in attr.ints) + "]"
    if t == A.FLOATS:
        return "[" + ", ".join(_float_literal(v) for v in attr.floats) + "]"
    raise UnsupportedError(f"{where}: attribute '{attr.name}' of type {A.AttributeType.Name(t)} is not supported")


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
        self.names: dict[str, str] = {}  # onnx value name -> SSA name
        self.value_types: dict[str, str] = {}
        self.value_dtypes: dict[str, int] = {}  # SSA name -> element type code
        self.lines: list[str] = []
        self.weights: list[dict] = []
        self.counter = 0

    def fresh(self) -> str:
        self.counter += 1
        return f"%v{self.counter}"

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
                f"which hipdnn-ep does not support"
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

    def operand(self, name: str, where: str) -> str:
        if name in self.names:
            return self.names[name]
        tensor = self.initializers.get(name) or self.constants.get(name)
        if tensor is None:
            raise ModelError(f"{where}: input '{name}' is produced by no node, initializer or graph input")
        ssa = self.fresh()
        dtype = tensor.data_type
        if dtype not in hir.DTYPES:
            raise UnsupportedError(f"{where}: constant '{name}' has unsupported element type "
                                   f"{_dtype_name(dtype)}")
        dims = list(tensor.dims)
        ttype = hir.tensor_type_str(dtype, dims)
        n = int(np.prod(dims)) if dims else 1
        external = tensor.data_location == onnx.TensorProto.EXTERNAL
        if dtype in (6, 7) and n <= SMALL_INT_CONSTANT and not external:
            values = numpy_helper.to_array(tensor).reshape(-1).tolist()
            vals = ", ".join(hir.mlir_string(str(int(v))) for v in values)
            dim_text = ", ".join(hir.mlir_string(str(d)) for d in dims)
            self.lines.append(
                f'{ssa} = "hipdnn.constant"() {{name = {hir.mlir_string(name)}, values = [{vals}], '
                f'"hipdnn.dims" = [[{dim_text}]]}} : () -> {ttype}'
            )
        else:
            self.lines.append(f'{ssa} = "hipdnn.weight"() {{name = {hir.mlir_string(name)}}} : () -> {ttype}')
        self.names[name] = ssa
        self.value_types[ssa] = ttype
        self.value_dtypes[ssa] = dtype
        return ssa

    def constant_node(self, node: onnx.NodeProto, where: str) -> None:
        attrs = {a.name: a for a in node.attribute}
        if "value" in attrs:
            tensor = attrs["value"].t
        elif "value_int" in attrs:
            tensor = numpy_helper.from_array(np.array(attrs["value_int"].i, dtype=np.int64))
        elif "value_ints" in attrs:
            tensor = numpy_helper.from_array(np.array(list(attrs["value_ints"].ints), dtype=np.int64))
        elif "value_float" in attrs:
            tensor = numpy_helper.from_array(np.array(attrs["value_float"].f, dtype=np.float32))
        elif "value_floats" in attrs:
            tensor = numpy_helper.from_array(np.array(list(attrs["value_floats"].floats), dtype=np.float32))
        else:
            raise UnsupportedError(f"{where}: only tensor, int(s) and float(s) Constant values are supported")
        tensor = onnx.TensorProto.FromString(tensor.SerializeToString())
        tensor.name = node.output[0]
        self.constants[node.output[0]] = tensor

    def run(self) -> str:
        g = self.graph
        args = []
        inputs_meta = []
        for i, vi in enumerate(x for x in g.input if x.name not in self.initializers):
            where = f"graph input '{vi.name}'"
            dtype, dims = self.tensor_type(vi.name, where)
            if dims is None:
                raise UnsupportedError(f"{where}: inputs of unknown rank are not supported")
            ssa = f"%arg{i}"
            ttype = hir.tensor_type_str(dtype, dims)
            args.append(f"{ssa}: {ttype}")
            self.names[vi.name] = ssa
            self.value_types[ssa] = ttype
            self.value_dtypes[ssa] = dtype
            # a dynamic dim without a name gets one (unique to this input and axis) for the metadata
            inputs_meta.append({"name": vi.name, "dtype": dtype,
                                "dims": [f"{vi.name}_d{k}" if d is None else d for k, d in enumerate(dims)]})
        for index, node in enumerate(g.node):
            where = node_label(node, index)
            if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
                self.constant_node(node, where)
                continue
            entry = lookup(node.domain, node.op_type)
            if entry is None:
                dom = node.domain or "ai.onnx"
                raise UnsupportedError(f"{where}: op {node.op_type} of domain {dom} is not supported "
                                       f"(see hipdnn_ep_compiler.supported_ops())")
            roles = [i for i, n in enumerate(node.input) if n]
            operands = [self.operand(node.input[i], where) for i in roles]
            operand_types = [self.value_types[o] for o in operands]
            results, result_types = [], []
            fallback = None
            if operands:
                fallback = self.value_dtypes[operands[0]]
            for k, out in enumerate(node.output):
                if not out:
                    continue
                if k > 0 and node.op_type == "LayerNormalization":
                    if any(out in n.input for n in g.node) or any(out == o.name for o in g.output):
                        raise UnsupportedError(f"{where}: the Mean/InvStdDev outputs are not supported")
                    continue
                dtype, dims = self.tensor_type(out, where, fallback_dtype=fallback)
                if dims is None:
                    dims = []  # rank unknown; refine_shapes computes it
                    ttype = f"tensor<*x{hir.DTYPES[dtype][0]}>"
                else:
                    ttype = hir.tensor_type_str(dtype, dims)
                ssa = self.fresh()
                self.names[out] = ssa
                self.value_types[ssa] = ttype
                self.value_dtypes[ssa] = dtype
                results.append(ssa)
                result_types.append(ttype)
            attr_items = [f"operand_roles = [{', '.join(f'{r} : i64' for r in roles)}]",
                          f'"onnx.node" = {hir.mlir_string(where)}']
            for a in node.attribute:
                attr_items.append(f"{hir.mlir_string('onnx.' + a.name)} = {_attr_text(a, where)}")
            lhs = (", ".join(results) + " = ") if results else ""
            self.lines.append(
                f'{lhs}"{entry.op_name}"({", ".join(operands)}) {{{", ".join(attr_items)}}} : '
                f'({", ".join(operand_types)}) -> ({", ".join(result_types)})'
            )
        outs, out_types, outputs_meta = [], [], []
        for vi in g.output:
            where = f"graph output '{vi.name}'"
            ssa = self.operand(vi.name, where) if vi.name not in self.names else self.names[vi.name]
            outs.append(ssa)
            out_types.append(self.value_types[ssa])
            fallback = self.value_dtypes[ssa]
            dtype, dims = self.tensor_type(vi.name, where, fallback_dtype=fallback)
            outputs_meta.append({"name": vi.name, "dtype": dtype, "dims": dims})
        signature = {"inputs": inputs_meta, "outputs": outputs_meta}
        body = "\n    ".join(self.lines)
        return (
            f'func.func @main({", ".join(args)}) -> ({", ".join(out_types)}) '
            f'attributes {{"hipdnn.signature" = {hir.mlir_string(json.dumps(signature))}}} {{\n    {body}\n'
            f'    return {", ".join(outs)} : {", ".join(out_types)}\n}}\n'
        )


def import_model(model: onnx.ModelProto, context=None):
    """The hipdnn IR module for a loaded (shape-inferred) model."""
    text = _Importer(model).run()
    ctx = context or hir.new_context()
    try:
        return hir.ir.Module.parse(text, ctx)
    except Exception as exc:  # an importer bug, not a user error; keep the IR for the report
        raise RuntimeError(f"internal error: imported IR does not parse: {exc}\n{text}") from exc
