"""Every operator the compiler supports, through onnxruntime with the EP
registered and CPU fallback disabled, compared with ORT's CPU EP.

Operators are grouped into a few models (one graph output per operator) so
that each group compiles once per variant: "fixed" shapes, and "dynamic"
shapes run with three different sizes in one session.  Sessions are created
with graph optimizations off so that every node reaches the EP (constant
folding would otherwise remove e.g. Shape on fixed shapes); with fallback
disabled, a session that creates at all runs every node on the EP, and the
compile log shows the operator in the subgraph the EP compiled."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

import hipdnn_ep_compiler
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from conftest import NO_FALLBACK, SPY, Env, _spy_python, compile_log, cpu_session, make_session
from onnx import TensorProto as T
from onnx import helper, numpy_helper

OPSET = 20  # Gelu is in the ONNX domain from opset 20
MS = "com.microsoft"
DYNAMIC_SIZES = (2, 5, 1)
FIXED_SIZE = 3


@dataclass
class Op:
    ident: str  # test id and graph output name
    op_type: str
    inputs: list[str]
    attrs: dict = field(default_factory=dict)
    domain: str = ""
    out_type: int = T.FLOAT
    extra_outputs: list[str] = field(default_factory=list)  # more outputs (graph outputs, not compared)
    extra_types: list[int] = field(default_factory=list)  # their element types (default: out_type)
    internal: bool = False  # not a graph output (a type onnxruntime's numpy binding cannot give): not compared


@dataclass
class Group:
    """Graph inputs as (name, dtype, dims with 'N' for the dimension that is dynamic), the
    operators, and constant initializers."""

    inputs: list[tuple[str, int, list]]
    ops: list[Op]
    constants: dict[str, np.ndarray] = field(default_factory=dict)
    opset: int = OPSET  # the ai.onnx opset the group's model imports
    # the oldest onnxruntime whose CPU EP computes the group's reference (None: every supported one)
    min_onnxruntime: tuple[int, int] | None = None


def _c(values, dtype=np.int64) -> np.ndarray:
    return np.array(values, dtype)


X = ("x", T.FLOAT, ["N", 3, 4])
GROUPS: dict[str, Group] = {
    "arith": Group(
        [X, ("y", T.FLOAT, [3, 4]), ("p", T.FLOAT, ["N", 3, 4]), ("q", T.FLOAT, [1, 4])],
        [Op("Add", "Add", ["x", "y"]), Op("Sub", "Sub", ["x", "y"]), Op("Mul", "Mul", ["x", "y"]),
         Op("Div", "Div", ["x", "p"]), Op("Pow", "Pow", ["p", "q"])]),
    "compare": Group(
        [("h", T.FLOAT, ["N", 3, 4]), ("k", T.FLOAT, [3, 4]), ("b", T.BOOL, ["N", 3, 4]), X,
         ("y", T.FLOAT, ["N", 3, 1])],
        [Op("Equal", "Equal", ["h", "k"], out_type=T.BOOL), Op("Less", "Less", ["h", "k"], out_type=T.BOOL),
         Op("Greater", "Greater", ["h", "k"], out_type=T.BOOL), Op("Where", "Where", ["b", "x", "y"])]),
    "unary": Group(
        [X, ("p", T.FLOAT, ["N", 3, 4])],
        [*(Op(op, op, ["x"]) for op in ("Relu", "Sigmoid", "Tanh", "Exp", "Neg", "Erf", "Identity")),
         Op("Log", "Log", ["p"]), Op("Sqrt", "Sqrt", ["p"]), Op("Gelu", "Gelu", ["x"]),
         Op("Gelu-tanh", "Gelu", ["x"], {"approximate": "tanh"}),
         Op("Gelu-contrib", "Gelu", ["x"], domain=MS), Op("FastGelu", "FastGelu", ["x"], domain=MS)]),
    "linear": Group(
        [X, ("w", T.FLOAT, [4, 5]), ("a", T.FLOAT, ["N", 4]), ("m", T.FLOAT, ["N", 1, 3, 4]),
         ("v", T.FLOAT, [2, 4, 5])],
        [Op("MatMul", "MatMul", ["x", "w"]), Op("MatMul-batched-broadcast", "MatMul", ["m", "v"]),
         Op("MatMul-weight", "MatMul", ["x", "W"]),
         Op("Gemm", "Gemm", ["a", "G", "C"], {"transB": 1, "alpha": 0.5, "beta": 2.0}),
         Op("Softmax", "Softmax", ["x"], {"axis": 1}), Op("Softmax-last", "Softmax", ["x"], {"axis": -1}),
         Op("LayerNormalization", "LayerNormalization", ["x", "scale", "bias"], {"axis": -1, "epsilon": 1e-3}),
         # its Mean and InvStdDev outputs, compared through Identity
         Op("LayerNormalization-stats", "LayerNormalization", ["x", "scale", "bias"], {"axis": -1},
            extra_outputs=["ln_mean", "ln_inv_std_dev"]),
         Op("LayerNormalization-Mean", "Identity", ["ln_mean"]),
         Op("LayerNormalization-InvStdDev", "Identity", ["ln_inv_std_dev"])],
        {"W": np.linspace(-1, 1, 20, dtype=np.float32).reshape(4, 5),
         "G": np.linspace(-2, 2, 20, dtype=np.float32).reshape(5, 4), "C": np.arange(5, dtype=np.float32),
         "scale": np.linspace(0.5, 1.5, 4, dtype=np.float32), "bias": np.ones(4, np.float32)}),
    "reduce": Group(
        [X],
        [Op("ReduceSum", "ReduceSum", ["x", "axis1"], {"keepdims": 1}),
         Op("ReduceMean", "ReduceMean", ["x", "axis_last"], {"keepdims": 0}),
         Op("ReduceMax", "ReduceMax", ["x", "axis2"], {"keepdims": 1})],
        {"axis1": _c([1]), "axis_last": _c([-1]), "axis2": _c([2])}),
    "layout": Group(
        [X, ("z", T.FLOAT, ["N", 2, 4]), ("s", T.FLOAT, ["N", 1, 4]), ("idx", T.INT64, [2])],
        [Op("Reshape", "Reshape", ["x", "shape"]), Op("Transpose", "Transpose", ["x"], {"perm": [2, 0, 1]}),
         Op("Concat", "Concat", ["x", "z"], {"axis": 1}),
         Op("Slice", "Slice", ["x", "starts", "ends", "axes", "steps"]),
         Op("Slice-negative-step", "Slice", ["x", "starts_r", "ends_r", "axes_r", "steps_r"]),
         Op("Gather", "Gather", ["x", "idx"], {"axis": 1}),
         Op("Unsqueeze", "Unsqueeze", ["x", "unsq_axes"]), Op("Squeeze", "Squeeze", ["s", "sq_axes"]),
         Op("Shape", "Shape", ["x"], out_type=T.INT64), Op("Expand", "Expand", ["s", "expand_to"]),
         Op("Cast", "Cast", ["x"], {"to": T.FLOAT16}, out_type=T.FLOAT16)],
        {"shape": _c([0, -1]), "starts": _c([1, -3]), "ends": _c([3, 100]), "axes": _c([1, 2]),
         "steps": _c([1, 2]), "starts_r": _c([-1]), "ends_r": _c([-100]), "axes_r": _c([2]),
         "steps_r": _c([-2]), "unsq_axes": _c([0, -1]), "sq_axes": _c([1]), "expand_to": _c([3, 1])}),
    # what exporters emit around attention masks and shapes
    "mask": Group(
        [X, ("p", T.FLOAT, ["N", 3, 4]), ("h", T.FLOAT, ["N", 3, 4]), ("k", T.FLOAT, [3, 4]),
         ("b", T.BOOL, ["N", 3, 4]), ("c", T.BOOL, [3, 4]), ("i", T.INT64, ["N", 3, 4])],
        [Op("GreaterOrEqual", "GreaterOrEqual", ["h", "k"], out_type=T.BOOL),
         Op("LessOrEqual", "LessOrEqual", ["h", "k"], out_type=T.BOOL),
         Op("And", "And", ["b", "c"], out_type=T.BOOL), Op("Or", "Or", ["b", "c"], out_type=T.BOOL),
         Op("Xor", "Xor", ["b", "c"], out_type=T.BOOL), Op("Not", "Not", ["b"], out_type=T.BOOL),
         Op("IsNaN", "IsNaN", ["x"], out_type=T.BOOL),
         Op("Min", "Min", ["x", "p", "k"]), Op("Max", "Max", ["x", "k"]), Op("Clip", "Clip", ["x", "lo", "hi"]),
         Op("Mod", "Mod", ["i", "divisor"], out_type=T.INT64), Op("Mod-fmod", "Mod", ["x", "p"], {"fmod": 1}),
         *(Op(op, op, ["x"]) for op in ("Abs", "Floor", "Ceil", "Sign")), Op("Reciprocal", "Reciprocal", ["p"]),
         Op("x-shape", "Shape", ["x"], out_type=T.INT64),
         Op("x-batch", "Gather", ["x-shape", "zero"], {"axis": 0}, out_type=T.INT64),
         Op("Range", "Range", ["zero", "x-batch", "one"], out_type=T.INT64),
         Op("x-batch-float", "Cast", ["x-batch"], {"to": T.FLOAT}),
         Op("Range-float", "Range", ["minus_one_f", "x-batch-float", "one_f"]),
         Op("Range-float-constant", "Range", ["quarter_f", "one_f", "quarter_f"]),
         Op("ConstantOfShape", "ConstantOfShape", ["x-shape"],
            {"value": numpy_helper.from_array(np.array([1.5], np.float32))}),
         Op("ConstantOfShape-int", "ConstantOfShape", ["x-shape"],
            {"value": numpy_helper.from_array(np.array([7], np.int64))}, out_type=T.INT64),
         Op("GatherElements", "GatherElements", ["x", "gather_idx"], {"axis": 2}),
         Op("CumSum", "CumSum", ["x", "one"], {"reverse": 1}), Op("CumSum-int", "CumSum", ["i", "zero"],
                                                                   {"exclusive": 1}, out_type=T.INT64),
         Op("Trilu", "Trilu", ["x", "one"]), Op("Trilu-lower", "Trilu", ["x"], {"upper": 0}),
         Op("Flatten", "Flatten", ["x"], {"axis": 1}),
         Op("Split", "Split", ["x", "split"], {"axis": 2}, extra_outputs=["Split-rest"]),
         Op("Tile", "Tile", ["x", "repeats"])],
        {"lo": np.array(-0.5, np.float32), "hi": np.array(0.5, np.float32), "divisor": _c([[3, -2, 5, 1]] * 3),
         "zero": _c(0), "one": _c(1), "split": _c([1, 3]), "repeats": _c([1, 2, 1]),
         "gather_idx": _c([[[3, -1], [0, 1], [2, 2]]]), "minus_one_f": np.array(-1.0, np.float32),
         "one_f": np.array(1.0, np.float32), "quarter_f": np.array(0.25, np.float32)}),
    # the vision family
    "vision": Group(
        [("img", T.FLOAT, ["N", 4, 7, 6]), ("grid", T.FLOAT, ["N", 5, 4, 2])],
        [Op("Conv", "Conv", ["img", "cw", "cb"], {"pads": [1, 1, 1, 1], "strides": [2, 1]}),
         Op("Conv-depthwise-same", "Conv", ["img", "dw"], {"group": 4, "auto_pad": "SAME_UPPER"}),
         Op("MaxPool", "MaxPool", ["img"], {"kernel_shape": [3, 2], "strides": [2, 2], "ceil_mode": 1}),
         # MaxPool's Indices (the max_pool_indices kernel), column-major over the spatial dims
         Op("MaxPool-with-indices", "MaxPool", ["img"], {"kernel_shape": [2, 3], "pads": [1, 0, 0, 1],
                                                         "storage_order": 1},
            extra_outputs=["maxpool_indices"], extra_types=[T.INT64]),
         Op("MaxPool-indices", "Identity", ["maxpool_indices"], out_type=T.INT64),
         Op("AveragePool", "AveragePool", ["img"], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1],
                                                    "count_include_pad": 1}),
         Op("GlobalAveragePool", "GlobalAveragePool", ["img"]), Op("GlobalMaxPool", "GlobalMaxPool", ["img"]),
         Op("BatchNormalization", "BatchNormalization", ["img", "g4", "b4", "m4", "v4"]),
         Op("BatchNormalization-training", "BatchNormalization", ["img", "g4", "b4", "m4", "v4"],
            {"training_mode": 1, "momentum": 0.8}, extra_outputs=["bn_running_mean", "bn_running_var"]),
         Op("BatchNormalization-running_mean", "Identity", ["bn_running_mean"]),
         Op("BatchNormalization-running_var", "Identity", ["bn_running_var"]),
         Op("InstanceNormalization", "InstanceNormalization", ["img", "g4", "b4"]),
         Op("GroupNormalization", "GroupNormalization", ["img", "g2", "b2"], {"num_groups": 2}),
         *(Op(op, op, ["img"]) for op in ("HardSigmoid", "HardSwish", "LeakyRelu", "Elu", "Selu", "Celu", "Softplus",
                                          "Mish", "ThresholdedRelu")),
         Op("PRelu", "PRelu", ["img", "slope"]),
         Op("ConvTranspose", "ConvTranspose", ["img", "tw", "tb"], {"strides": [2, 2], "pads": [1, 0, 1, 1],
                                                                    "output_padding": [1, 0]}),
         Op("ConvTranspose-group-same", "ConvTranspose", ["img", "tw2"], {"group": 2, "auto_pad": "SAME_UPPER",
                                                                          "strides": [2, 3]}),
         Op("LpPool", "LpPool", ["img"], {"kernel_shape": [3, 2], "strides": [2, 1], "pads": [1, 0, 1, 1]}),
         Op("GridSample", "GridSample", ["img", "grid"], {"mode": "linear", "padding_mode": "border"})],
        {"tw": np.linspace(-1, 1, 4 * 3 * 9, dtype=np.float32).reshape(4, 3, 3, 3),
         "tb": np.arange(3, dtype=np.float32),
         "tw2": np.linspace(-1, 1, 4 * 2 * 6, dtype=np.float32).reshape(4, 2, 3, 2),
         "cw": np.linspace(-1, 1, 6 * 4 * 9, dtype=np.float32).reshape(6, 4, 3, 3),
         "cb": np.arange(6, dtype=np.float32), "dw": np.linspace(-1, 1, 8 * 4, dtype=np.float32).reshape(8, 1, 2, 2),
         "g4": np.linspace(0.5, 1.5, 4, dtype=np.float32), "b4": np.arange(4, dtype=np.float32),
         "m4": np.linspace(-0.5, 0.5, 4, dtype=np.float32), "v4": np.linspace(0.5, 2.0, 4, dtype=np.float32),
         "g2": np.array([0.5, 2.0], np.float32), "b2": np.array([1.0, -1.0], np.float32),
         "slope": np.array([0.1, -0.2, 0.3, 2.0], np.float32).reshape(4, 1, 1)}),
    # Resize with an empty roi input: onnxruntime 1.23's CPU EP refuses it ("Scale value should be greater than 0")
    "resize": Group(
        [("img", T.FLOAT, ["N", 4, 7, 6])],
        [Op("Resize", "Resize", ["img", "", "rs_scales"], {"mode": "nearest"}),
         Op("Resize-linear-sizes", "Resize", ["img", "", "", "rs_sizes"], {"mode": "linear", "axes": [2, 3]}),
         Op("Resize-cubic-align", "Resize", ["img", "", "rs_scales_hw"], {
             "mode": "cubic", "axes": [-2, -1], "coordinate_transformation_mode": "align_corners"})],
        {"rs_scales": np.array([1, 1, 2, 1.5], np.float32), "rs_sizes": _c([10, 4]),
         "rs_scales_hw": np.array([0.6, 1.7], np.float32)}, min_onnxruntime=(1, 24)),
    # the general ops: the other reductions, ArgMax/ArgMin, ScatterND, Pad, trigonometric and rounding
    "general": Group(
        [X, ("p", T.FLOAT, ["N", 3, 4]), ("i", T.INT64, ["N", 3, 4]), ("u", T.FLOAT, [2, 4]),
         ("w", T.FLOAT, [3])],
        [*(Op(op, op, ["x", "axis1"], {"keepdims": 1})
           for op in ("ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSumExp", "ReduceSumSquare")),
         Op("ReduceLogSum", "ReduceLogSum", ["p", "axis_last"], {"keepdims": 0}),
         Op("ReduceMin-int", "ReduceMin", ["i", "axis_last"], {"keepdims": 0}, out_type=T.INT64),
         Op("ArgMax", "ArgMax", ["x"], {"axis": 1}, out_type=T.INT64),
         Op("ArgMin", "ArgMin", ["i"], {"axis": -1, "keepdims": 0, "select_last_index": 1}, out_type=T.INT64),
         Op("ScatterND", "ScatterND", ["x", "scatter_idx", "u"]),
         Op("ScatterND-add", "ScatterND", ["x", "scatter_idx_rep", "w"], {"reduction": "add"}),
         Op("ScatterND-max", "ScatterND", ["x", "scatter_idx_rep", "w"], {"reduction": "max"}),
         Op("Pad", "Pad", ["x", "pads", "pad_value", "pad_axes"]),
         *(Op(f"Pad-{m}", "Pad", ["x", "pads_all"], {"mode": m}) for m in ("reflect", "edge", "wrap")),
         *(Op(op, op, ["x"]) for op in ("Sin", "Cos", "Tan", "Atan", "Sinh", "Cosh", "Asinh", "Round", "Softsign")),
         Op("t", "Tanh", ["x"]), *(Op(op, op, ["t"]) for op in ("Asin", "Acos", "Atanh")),
         Op("p1", "Add", ["p", "one_f"]), Op("Acosh", "Acosh", ["p1"]),
         Op("Sum", "Sum", ["x", "p"]), Op("Mean", "Mean", ["x", "p", "x"]),
         Op("GatherND", "GatherND", ["x", "gather_nd_idx"]),
         Op("x0", "ReduceMax", ["x", "axis0"], {"keepdims": 1}),
         Op("ScatterElements", "ScatterElements", ["x", "scatter_el_idx", "x0"], {"axis": -1}),
         Op("ScatterElements-add", "ScatterElements", ["x", "scatter_el_rep", "x0"], {"axis": 1, "reduction": "add"})],
        {"axis1": _c([1]), "axis_last": _c([-1]), "scatter_idx": _c([[0, 1], [-1, 2]]),
         "scatter_idx_rep": _c([[0, 1, 1], [0, 1, 1], [-1, 2, 3]]), "pads": _c([1, -1, 2, 3]),
         "pad_value": np.array(1.5, np.float32), "pad_axes": _c([0, -1]), "pads_all": _c([0, 1, 2, 0, 2, 1]),
         "one_f": np.array(1.0, np.float32), "gather_nd_idx": _c([[0, 2], [-1, 1]]), "axis0": _c([0]),
         "scatter_el_idx": _c([[[3, 2, 1, 0]] * 3]),
         "scatter_el_rep": _c([[[0, 2, 0, 1], [0, 0, 0, 1], [2, 2, 2, 2]]])}),
    # TopK, OneHot, the bitwise ops on uint8/int32/int64 (cast from 'i') and Einsum
    "int": Group(
        [X, ("i", T.INT64, ["N", 3, 4])],
        [Op("TopK", "TopK", ["x", "k2"], {"axis": -1}, extra_outputs=["topk_idx"], extra_types=[T.INT64]),
         Op("TopK-indices", "Identity", ["topk_idx"], out_type=T.INT64),
         Op("TopK-int-smallest", "TopK", ["i", "k2"], {"axis": 1, "largest": 0}, out_type=T.INT64,
            extra_outputs=["topk_int_idx"]),
         Op("OneHot", "OneHot", ["i", "depth", "onehot_values"], {"axis": 1}),
         Op("u8", "Cast", ["i"], {"to": T.UINT8}, out_type=T.UINT8),
         Op("i32", "Cast", ["i"], {"to": T.INT32}, out_type=T.INT32),
         Op("BitwiseAnd", "BitwiseAnd", ["u8", "mask_u8"], out_type=T.UINT8),
         Op("BitwiseOr", "BitwiseOr", ["i32", "mask_i32"], out_type=T.INT32),
         Op("BitwiseXor", "BitwiseXor", ["i", "mask_i64"], out_type=T.INT64),
         Op("BitwiseNot", "BitwiseNot", ["i"], out_type=T.INT64),
         Op("BitShift-left", "BitShift", ["u8", "shift_u8"], {"direction": "LEFT"}, out_type=T.UINT8),
         Op("BitShift-right", "BitShift", ["u8", "shift_u8"], {"direction": "RIGHT"}, out_type=T.UINT8),
         Op("Einsum-matmul", "Einsum", ["x", "w45"], {"equation": "nij,jk->nik"}),
         Op("Einsum-batch-dot", "Einsum", ["x", "x"], {"equation": "nij,nij->n"})],
        {"k2": _c([2]), "depth": _c(5), "onehot_values": np.array([-1.0, 2.0], np.float32),
         "mask_u8": _c([0x0F, 0xF0, 0x3C, 0xFF], np.uint8), "mask_i32": _c([1, 2, 4, -8], np.int32),
         "mask_i64": _c([5, -6, 7, 0]), "shift_u8": _c([0, 1, 7, 9], np.uint8),
         "w45": np.linspace(-1, 1, 20, dtype=np.float32).reshape(4, 5)}),
    # the integer types of runtime ABI 1.3 (INT16, UINT16, UINT32, UINT64; cast from 'i', negative values
    # wrapping), INT8 arithmetic and comparisons, integer Pow with an exponent of another integer type
    "int-types": Group(
        [("i", T.INT64, ["N", 3, 4])],
        [Op("to-u16", "Cast", ["i"], {"to": T.UINT16}, out_type=T.UINT16),
         Op("to-i16", "Cast", ["i"], {"to": T.INT16}, out_type=T.INT16),
         Op("to-u32", "Cast", ["i"], {"to": T.UINT32}, out_type=T.UINT32),
         Op("to-u64", "Cast", ["i"], {"to": T.UINT64}, out_type=T.UINT64),
         Op("to-i8", "Cast", ["i"], {"to": T.INT8}, out_type=T.INT8),
         Op("to-i32", "Cast", ["i"], {"to": T.INT32}, out_type=T.INT32),
         Op("Add-u16", "Add", ["to-u16", "to-u16"], out_type=T.UINT16),
         Op("Mul-i16", "Mul", ["to-i16", "to-i16"], out_type=T.INT16),
         Op("Sub-u32", "Sub", ["to-u32", "seven_u32"], out_type=T.UINT32),
         Op("Div-u64", "Div", ["to-u64", "three_u64"], out_type=T.UINT64),
         Op("Less-i8", "Less", ["to-i8", "zero_i8"], out_type=T.BOOL),
         Op("Max-u32", "Max", ["to-u32", "seven_u32"], out_type=T.UINT32),
         Op("Abs-i16", "Abs", ["to-i16"], out_type=T.INT16),
         Op("Where-u32", "Where", ["Less-i8", "to-u32", "seven_u32"], out_type=T.UINT32),
         Op("Pow-i32", "Pow", ["to-i32", "two_i32"], out_type=T.INT32),
         Op("Pow-i64-i32", "Pow", ["i", "two_i32"], out_type=T.INT64),
         Op("Abs-i32", "Abs", ["to-i32"], out_type=T.INT32),
         # a negative base with a fractional exponent is NaN, which onnxruntime converts to int as x86 does
         # (INT_MIN) and the runtime to 0: the bases here are not negative
         Op("Pow-i32-f32", "Pow", ["Abs-i32", "halves_f32"], out_type=T.INT32),
         Op("Transpose-u64", "Transpose", ["to-u64"], {"perm": [0, 2, 1]}, out_type=T.UINT64)],
        {"seven_u32": np.array(7, np.uint32), "three_u64": np.array(3, np.uint64), "zero_i8": np.array(0, np.int8),
         "two_i32": np.array([2, 3, 0, 1], np.int32), "halves_f32": np.array([0.5, 2.5, 1.0, 3.0], np.float32)},
        min_onnxruntime=(1, 24)),  # onnxruntime 1.23's CPU EP (the reference) has no uint32 Where
    # FLOAT64 where the kernels compute in double (runtime ABI 1.3): binary arithmetic and comparisons,
    # Mod with fmod=1, Softmax, LogSoftmax, reductions (the ops are covered in float32 by the other groups)
    "float64": Group(
        [X, ("p", T.FLOAT, ["N", 3, 4])],
        [Op("x-f64", "Cast", ["x"], {"to": T.DOUBLE}, out_type=T.DOUBLE),
         Op("p-f64", "Cast", ["p"], {"to": T.DOUBLE}, out_type=T.DOUBLE),
         Op("Mul-f64", "Mul", ["x-f64", "p-f64"], out_type=T.DOUBLE),
         Op("Div-f64", "Div", ["x-f64", "p-f64"], out_type=T.DOUBLE),
         Op("Max-f64", "Max", ["x-f64", "p-f64"], out_type=T.DOUBLE),
         Op("Mod-f64", "Mod", ["x-f64", "p-f64"], {"fmod": 1}, out_type=T.DOUBLE),
         Op("Less-f64", "Less", ["x-f64", "p-f64"], out_type=T.BOOL),
         Op("Softmax-f64", "Softmax", ["x-f64"], out_type=T.DOUBLE),
         Op("LogSoftmax-f64", "LogSoftmax", ["x-f64"], {"axis": 1}, out_type=T.DOUBLE),
         Op("ReduceSum-f64", "ReduceSum", ["x-f64", "axis1"], {"keepdims": 0}, out_type=T.DOUBLE),
         Op("ReduceLogSumExp-f64", "ReduceLogSumExp", ["x-f64", "axis1"], out_type=T.DOUBLE)],
        {"axis1": _c([1])}),
    # BFLOAT16 and FLOAT8 (runtime ABI 1.3): Cast to each (saturate 1 and 0; the values stay within range,
    # where onnxruntime's no-saturate rules and ONNX's agree), through Identity, and back to FLOAT
    # (onnxruntime's numpy binding gives none of these types)
    "narrow-float-types": Group(
        [X],
        [*(op for name, t in (("bf16", T.BFLOAT16), ("e4m3fn", T.FLOAT8E4M3FN), ("e4m3fnuz", T.FLOAT8E4M3FNUZ),
                              ("e5m2", T.FLOAT8E5M2), ("e5m2fnuz", T.FLOAT8E5M2FNUZ))
           for op in (Op(f"to-{name}", "Cast", ["x"], {"to": t} if t == T.BFLOAT16 else {"to": t, "saturate": 0},
                         out_type=t, internal=True),
                      Op(f"Identity-{name}", "Identity", [f"to-{name}"], out_type=t, internal=True),
                      Op(f"from-{name}", "Cast", [f"Identity-{name}"], {"to": T.FLOAT}))),
         Op("CastLike-e4m3fn", "CastLike", ["x", "like_e4m3fn"], {"saturate": 1}, out_type=T.FLOAT8E4M3FN,
            internal=True),
         Op("from-CastLike-e4m3fn", "Cast", ["CastLike-e4m3fn"], {"to": T.FLOAT})],
        {"like_e4m3fn": numpy_helper.to_array(helper.make_tensor("like", T.FLOAT8E4M3FN, [1], [1.0]))}),
    # an Einsum that sums and transposes: onnxruntime 1.23's CPU EP fails it (a copy of mismatched sizes)
    "einsum-sum": Group([X], [Op("Einsum-transpose-sum", "Einsum", ["x"], {"equation": "nij->jn"})],
                        min_onnxruntime=(1, 24)),
    # onnxruntime-genai's LLM ops; GroupQueryAttention fed by the builder's attention-mask plumbing
    "llm": Group(
        [("x", T.FLOAT, ["N", 3, 16]), ("skip", T.FLOAT, ["N", 3, 16]), ("a", T.FLOAT, ["N", 3, 32]),
         ("qkv", T.FLOAT, ["N", 3, 64]), ("mask", T.INT64, ["N", 3])],
        [Op("SimplifiedLayerNormalization", "SimplifiedLayerNormalization", ["x", "gamma"], {"epsilon": 1e-5}),
         Op("SkipSimplifiedLayerNormalization", "SkipSimplifiedLayerNormalization", ["x", "skip", "gamma"],
            domain=MS),
         Op("MatMulNBits", "MatMulNBits", ["a", "qb", "qs", "qz"], {"K": 32, "N": 8, "bits": 4, "block_size": 16},
            domain=MS),
         Op("RotaryEmbedding", "RotaryEmbedding", ["x", "pos", "cos", "sin"], domain=MS),
         Op("mask-sum", "ReduceSum", ["mask", "one"], {"keepdims": 0}, out_type=T.INT64),
         Op("mask-sub", "Sub", ["mask-sum", "one"], out_type=T.INT64),
         Op("seqlens_k", "Cast", ["mask-sub"], {"to": T.INT32}, out_type=T.INT32),
         Op("mask-shape", "Shape", ["mask"], out_type=T.INT64),
         Op("mask-len", "Gather", ["mask-shape", "one_scalar"], {"axis": 0}, out_type=T.INT64),
         Op("total_len", "Cast", ["mask-len"], {"to": T.INT32}, out_type=T.INT32),
         Op("GroupQueryAttention", "GroupQueryAttention", ["qkv", "", "", "", "", "seqlens_k", "total_len", "cos",
                                                           "sin"],
            {"num_heads": 2, "kv_num_heads": 1, "do_rotary": 1}, domain=MS, extra_outputs=["present_k", "present_v"])],
        {"gamma": np.linspace(0.5, 1.5, 16, dtype=np.float32),
         "qb": (np.arange(8 * 2 * 8).reshape(8, 2, 8) * 37 % 256).astype(np.uint8),
         "qs": np.linspace(0.01, 0.1, 16, dtype=np.float32).reshape(8, 2), "qz": _c([0x98] * 8, np.uint8),
         "pos": _c([2]), "one": _c([1]), "one_scalar": _c(1),
         "cos": np.cos(np.arange(32)[:, None] / 10.0 ** np.arange(8)[None]).astype(np.float32),
         "sin": np.sin(np.arange(32)[:, None] / 10.0 ** np.arange(8)[None]).astype(np.float32)}),
    # the attention ops of ai.onnx opset 23: grouped-query causal Attention on 3-D inputs with a float mask
    # and the present KV outputs, 4-D Attention with a boolean mask, RotaryEmbedding without position_ids
    "attention23": Group(
        [("q", T.FLOAT, ["N", 3, 16]), ("kv", T.FLOAT, ["N", 3, 8]), ("q4", T.FLOAT, ["N", 2, 3, 8]),
         ("cache", T.FLOAT, ["N", 3, 4]), ("keep", T.BOOL, ["N", 1, 3, 3])],
        [Op("Attention-23", "Attention", ["q", "kv", "kv", "bias3"],
            {"q_num_heads": 4, "kv_num_heads": 2, "is_causal": 1}, extra_outputs=["present_key", "present_value"]),
         Op("Attention-23-4d", "Attention", ["q4", "q4", "q4", "keep"], {"softcap": 3.0}),
         Op("RotaryEmbedding-23", "RotaryEmbedding", ["q4", "cache", "cache"], {"interleaved": 1})],
        # onnxruntime 1.23's CPU Attention takes past_key and present_key only together
        {"bias3": np.linspace(-1, 1, 9, dtype=np.float32).reshape(3, 3)}, opset=23, min_onnxruntime=(1, 24)),
    # onnxruntime's transformer optimizer output (com.microsoft); ids and masks from the all-ones 'mask'
    "contrib": Group(
        [("x", T.FLOAT, ["N", 3, 16]), ("skip", T.FLOAT, ["N", 3, 16]), ("mask", T.INT64, ["N", 3])],
        [Op("BiasGelu", "BiasGelu", ["x", "b16"], domain=MS),
         Op("FastGelu-bias", "FastGelu", ["x", "b16"], domain=MS),
         Op("QuickGelu", "QuickGelu", ["x"], {"alpha": 1.5}, domain=MS),
         Op("SkipLayerNormalization", "SkipLayerNormalization", ["x", "skip", "gamma", "beta", "b16"],
            {"epsilon": 1e-5}, domain=MS),
         Op("mask32", "Cast", ["mask"], {"to": T.INT32}, out_type=T.INT32),
         Op("EmbedLayerNormalization", "EmbedLayerNormalization",
            ["mask32", "mask32", "word", "pos", "seg", "gamma", "beta", "mask32"], {"epsilon": 1e-5}, domain=MS,
            extra_outputs=["mask_index"], extra_types=[T.INT32]),
         Op("Attention", "Attention", ["x", "wqkv", "bqkv", "mask32"], {"num_heads": 2}, domain=MS),
         Op("MultiHeadAttention", "MultiHeadAttention", ["x", "skip", "skip", "bqkv", "mask32"], {"num_heads": 2},
            domain=MS)],
        {"b16": np.linspace(-1, 1, 16, dtype=np.float32), "gamma": np.linspace(0.5, 1.5, 16, dtype=np.float32),
         "beta": np.linspace(-0.2, 0.2, 16, dtype=np.float32),
         "word": np.sin(np.arange(4 * 16, dtype=np.float32)).reshape(4, 16),
         "pos": np.cos(np.arange(8 * 16, dtype=np.float32)).reshape(8, 16),
         "seg": np.linspace(-1, 1, 32, dtype=np.float32).reshape(2, 16),
         "wqkv": (np.sin(np.arange(16 * 48, dtype=np.float32)) * 0.3).reshape(16, 48),
         "bqkv": np.linspace(-0.5, 0.5, 48, dtype=np.float32)}),
    # quantization: QDQ, dynamic quantization, integer products
    "quant": Group(
        [("x", T.FLOAT, ["N", 3, 4]), ("x2", T.FLOAT, ["N", 4])],
        [Op("QuantizeLinear", "QuantizeLinear", ["x", "qs", "qz"], out_type=T.UINT8),
         Op("DequantizeLinear", "DequantizeLinear", ["QuantizeLinear", "qs", "qz"]),
         Op("DynamicQuantizeLinear", "DynamicQuantizeLinear", ["x"], out_type=T.UINT8,
            extra_outputs=["dql_scale", "dql_zp"], extra_types=[T.FLOAT, T.UINT8]),
         Op("MatMulInteger", "MatMulInteger", ["DynamicQuantizeLinear", "wq", "dql_zp", "wz"], out_type=T.INT32),
         Op("QLinearMatMul", "QLinearMatMul", ["QuantizeLinear", "qs", "qz", "wq", "ws", "wz", "ys", "yz"],
            out_type=T.UINT8),
         # x [N, 3, 4] as a 1-D convolution: 3 channels of width 4
         Op("ConvInteger", "ConvInteger", ["DynamicQuantizeLinear", "cw", "dql_zp", "cwz"], {"pads": [1, 1]},
            out_type=T.INT32),
         Op("QLinearConv", "QLinearConv", ["QuantizeLinear", "qs", "qz", "cwq", "cws", "cwqz", "ys", "yz", "cb"],
            {"pads": [1, 0], "strides": [2]}, out_type=T.UINT8),
         # com.microsoft QLinear* (quantize_static's QOperator format)
         Op("QLinearAdd", "QLinearAdd", ["QuantizeLinear", "qs", "qz", "QuantizeLinear", "qs", "qz", "ys", "yz"],
            domain=MS, out_type=T.UINT8),
         Op("QLinearMul", "QLinearMul", ["QuantizeLinear", "qs", "qz", "QuantizeLinear", "qs", "qz", "ys", "yz"],
            domain=MS, out_type=T.UINT8),
         Op("QLinearSigmoid", "QLinearSigmoid", ["QuantizeLinear", "qs", "qz", "ss", "yz"], domain=MS,
            out_type=T.UINT8),
         Op("QLinearLeakyRelu", "QLinearLeakyRelu", ["QuantizeLinear", "qs", "qz", "ys", "yz"], {"alpha": 0.1},
            domain=MS, out_type=T.UINT8),
         Op("QLinearGlobalAveragePool", "QLinearGlobalAveragePool", ["QuantizeLinear", "qs", "qz", "ys", "yz"],
            {"channels_last": 0}, domain=MS, out_type=T.UINT8),
         Op("QLinearConcat", "QLinearConcat", ["ys", "yz", "QuantizeLinear", "qs", "qz", "QuantizeLinear", "ys",
                                               "yz"], {"axis": 1}, domain=MS, out_type=T.UINT8),
         Op("q2", "QuantizeLinear", ["x2", "qs", "qz"], out_type=T.UINT8),
         Op("QGemm", "QGemm", ["q2", "qs", "qz", "wq", "ws", "wz", "gc", "ys", "yz"], {"alpha": 0.5}, domain=MS,
            out_type=T.UINT8),
         Op("QGemm-float", "QGemm", ["q2", "qs", "qz", "wq", "ws", "wz"], domain=MS),
         Op("MaxPool-uint8", "MaxPool", ["QuantizeLinear"], {"kernel_shape": [2], "pads": [1, 0]}, out_type=T.UINT8)],
        {"qs": np.array(0.05, np.float32), "qz": np.array(128, np.uint8),
         "cw": (np.arange(18).reshape(2, 3, 3) * 37 % 256).astype(np.uint8), "cwz": np.array(3, np.uint8),
         "cwq": (np.arange(18).reshape(2, 3, 3) * 29 % 255 - 127).astype(np.int8),
         "cws": np.array([0.01, 0.03], np.float32), "cwqz": np.zeros(2, np.int8), "cb": np.array([-300, 500], np.int32),
         "ss": np.array(1 / 256, np.float32), "gc": np.array([-40, 0, 25, 7, -3], np.int32),
         "wq": (np.arange(20).reshape(4, 5) * 29 % 255 - 127).astype(np.int8), "wz": np.array(0, np.int8),
         "ws": np.array(0.02, np.float32), "ys": np.array(0.1, np.float32), "yz": np.array(100, np.uint8)}),
    # 16-bit QuantizeLinear/DequantizeLinear (ai.onnx opset 21; runtime ABI 1.3)
    "quant16": Group(
        [("x", T.FLOAT, ["N", 3, 4])],
        [Op("Quantize-i16", "QuantizeLinear", ["x", "qs16", "qz16"], out_type=T.INT16),
         Op("Dequantize-i16", "DequantizeLinear", ["Quantize-i16", "qs16", "qz16"]),
         Op("Quantize-u16", "QuantizeLinear", ["x", "qs16", "qzu16"], out_type=T.UINT16),
         Op("Dequantize-u16", "DequantizeLinear", ["Quantize-u16", "qs16", "qzu16"])],
        {"qs16": np.array(1e-4, np.float32), "qz16": np.array(-7, np.int16), "qzu16": np.array(30000, np.uint16)},
        opset=21),
    # small ops on existing kernels (compiler ops/misc.py), at opset 20: onnxruntime 1.23's CPU EP lacks the
    # opset 22 versions of some (LpNormalization); RMSNormalization is opset 23, Swish 24 (1.23 stops at 23)
    "misc": Group(
        [X, ("img", T.FLOAT, ["N", 8, 2, 4]), ("sq", T.FLOAT, ["N", 4])],
        [Op("CastLike", "CastLike", ["x", "like"], out_type=T.FLOAT16),
         Op("Size", "Size", ["x"], out_type=T.INT64),
         Op("Dropout", "Dropout", ["x", "ratio", "training"], extra_outputs=["dropout_mask"], extra_types=[T.BOOL]),
         Op("LogSoftmax", "LogSoftmax", ["x"], {"axis": 1}), Op("Hardmax", "Hardmax", ["x"]),
         Op("Shrink", "Shrink", ["x"], {"lambd": 0.4, "bias": 0.1}),
         Op("IsInf", "IsInf", ["x"], out_type=T.BOOL),
         Op("EyeLike", "EyeLike", ["sq"], {"k": 1}),
         Op("LpNormalization", "LpNormalization", ["x"], {"p": 1, "axis": 1}),
         Op("MeanVarianceNormalization", "MeanVarianceNormalization", ["img"]),
         Op("DepthToSpace", "DepthToSpace", ["img"], {"blocksize": 2, "mode": "CRD"}),
         Op("SpaceToDepth", "SpaceToDepth", ["img"], {"blocksize": 2})],
        {"like": np.zeros(1, np.float16), "ratio": np.array(0.25, np.float32), "training": np.array(False)}),
    "misc-opset23": Group([X], [Op("RMSNormalization", "RMSNormalization", ["x", "scale"], {"epsilon": 1e-3})],
                          {"scale": np.linspace(0.5, 1.5, 4, dtype=np.float32)}, opset=23),
    "misc-opset24": Group([X], [Op("Swish", "Swish", ["x"], {"alpha": 0.5})], opset=24),  # skipped on 1.23
    # Mod of floats with fmod=0 (the remainder of floor division) is defined from opset 28
    "mod-opset28": Group([X, ("y", T.FLOAT, [3, 4])], [Op("Mod-float-floor", "Mod", ["x", "y"])], opset=28),
}

# float16 versions of a few math operators, checked against the float32 CPU result of the same inputs.
F16_GROUP = Group(
    [X, ("y", T.FLOAT, [3, 4]), ("w", T.FLOAT, [4, 5])],
    [Op("Add", "Add", ["x", "y"]), Op("Mul", "Mul", ["x", "y"]), Op("Relu", "Relu", ["x"]),
     Op("Tanh", "Tanh", ["x"]), Op("Softmax", "Softmax", ["x"], {"axis": -1}), Op("MatMul", "MatMul", ["x", "w"])])


def _retype(dtype: int, to16: bool) -> int:
    return T.FLOAT16 if to16 and dtype == T.FLOAT else dtype


def build_model(group: Group, path: Path, dynamic: bool, float16: bool = False) -> Path:
    decl = [helper.make_tensor_value_info(n, _retype(t, float16), [(d if dynamic else FIXED_SIZE) if d == "N" else d
                                                                   for d in dims]) for n, t, dims in group.inputs]
    nodes = [helper.make_node(op.op_type, op.inputs, [op.ident, *op.extra_outputs], name=f"node-{op.ident}",
                              domain=op.domain, **op.attrs) for op in group.ops]
    outputs = [helper.make_tensor_value_info(name, _retype(t, float16), None)
               for op in group.ops if not op.internal
               for name, t in zip((op.ident, *op.extra_outputs),
                                  (op.out_type, *op.extra_types, *[op.out_type] * len(op.extra_outputs)), strict=False)]
    inits = [numpy_helper.from_array(v.astype(np.float16) if float16 and v.dtype == np.float32 else v, n)
             for n, v in group.constants.items()]
    opsets = [helper.make_opsetid("", group.opset)]
    if any(op.domain == MS for op in group.ops):
        opsets.append(helper.make_opsetid(MS, 1))
    model = helper.make_model(helper.make_graph(nodes, path.stem, decl, outputs, initializer=inits),
                              opset_imports=opsets)
    model.ir_version = 10
    onnx.save(model, str(path))
    return path


def make_feeds(group: Group, n: int, seed: int, float16: bool = False) -> dict[str, np.ndarray]:
    """Normal values; 'p', 'q' positive; 'h', 'k' half-integers (so Equal has hits); indices in range;
    'mask' all ones."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for name, dtype, dims in group.inputs:
        shape = [n if d == "N" else d for d in dims]
        if name == "mask":  # an attention mask: every position valid
            feeds[name] = np.ones(shape, np.int64)
        elif dtype == T.BOOL:
            feeds[name] = rng.random(shape) > 0.5
        elif dtype == T.INT64:
            feeds[name] = rng.integers(-3, 3, size=shape).astype(np.int64)
        elif name in ("p", "q"):
            feeds[name] = (np.abs(rng.standard_normal(shape)) + 0.1).astype(np.float32)
        elif name in ("h", "k"):
            feeds[name] = (rng.integers(-2, 3, size=shape) / 2).astype(np.float32)
        else:
            feeds[name] = rng.standard_normal(shape).astype(np.float32)
        if float16 and feeds[name].dtype == np.float32:
            feeds[name] = feeds[name].astype(np.float16)
    return feeds


@dataclass
class GroupResult:
    got: list[dict[str, np.ndarray]]  # per size: output name -> EP result
    want: list[dict[str, np.ndarray]]  # per size: output name -> CPU EP result
    compiled_ops: list[list[str]]  # op types of each subgraph the EP compiled


class GroupRunner:
    """Compiles and runs each (group, variant) once per test module."""

    def __init__(self, work: Path, env: Env, devices: list) -> None:
        self.work, self.env, self.devices = work, env, devices
        self.results: dict[str, GroupResult | BaseException] = {}

    def result(self, name: str, variant: str) -> GroupResult:
        key = f"{name}-{variant}"
        if key not in self.results:
            try:
                self.results[key] = self._run(name, variant)
            except Exception as exc:  # every operator of the group reports the same failure
                self.results[key] = exc
        r = self.results[key]
        if isinstance(r, BaseException):
            raise r
        return r

    def _run(self, name: str, variant: str) -> GroupResult:
        float16 = variant.startswith("float16")
        group = F16_GROUP if float16 else GROUPS[name]
        dynamic = variant.endswith("dynamic")
        model = build_model(group, self.work / f"{name}-{variant}.onnx", dynamic, float16)
        reference = build_model(group, self.work / f"{name}-{variant}-f32.onnx", dynamic) if float16 else model
        before = len(self.env.compiles())
        sess = make_session(model, self.devices, self.env.options, NO_FALLBACK, optimize=False)
        compiled = self.env.compiled_ops()[before:]
        cpu = cpu_session(reference)
        names = [op.ident for op in group.ops if not op.internal]
        got, want = [], []
        for i, n in enumerate(DYNAMIC_SIZES if dynamic else (FIXED_SIZE,)):
            feeds = make_feeds(group, n, seed=i, float16=float16)
            got.append(dict(zip(names, sess.run(names, feeds), strict=True)))
            ref_feeds = {k: v.astype(np.float32) if v.dtype == np.float16 else v for k, v in feeds.items()}
            want.append(dict(zip(names, cpu.run(names, ref_feeds), strict=True)))
        return GroupResult(got, want, compiled)


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory, ep_devices) -> GroupRunner:
    work = tmp_path_factory.mktemp("ops")
    spy = _spy_python(work)
    env = Env({"compiler_python": str(spy), "cache_dir": str(work / "cache")}, work / "log", work / "cache")
    with compile_log(env.log_dir):
        yield GroupRunner(work, env, ep_devices)


def _params():
    for name, group in GROUPS.items():
        for op in group.ops:
            if op.internal:
                continue
            for variant in ("fixed", "dynamic"):
                yield pytest.param(name, op, variant, id=f"{op.ident}-{variant}")
    for op in F16_GROUP.ops:
        for variant in ("float16-fixed", "float16-dynamic"):
            yield pytest.param("float16", op, variant, id=f"{op.ident}-{variant}")


@functools.cache
def _cpu_loads_opset(opset: int) -> bool:
    """Whether this onnxruntime loads a model of this ai.onnx opset (1.23 stops at 23)."""
    io = [helper.make_tensor_value_info(n, T.FLOAT, [1]) for n in ("x", "y")]
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "probe", io[:1], io[1:])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    try:
        ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    except Exception:  # noqa: BLE001 - onnxruntime's Fail for an opset it does not know
        return False
    return True


@pytest.mark.parametrize(("group", "op", "variant"), list(_params()))
def test_op_on_the_ep_matches_the_cpu_ep(runner: GroupRunner, group: str, op: Op, variant: str) -> None:
    if group in GROUPS and not _cpu_loads_opset(GROUPS[group].opset):
        pytest.skip(f"onnxruntime {ort.__version__} does not load opset {GROUPS[group].opset}")
    oldest = GROUPS[group].min_onnxruntime if group in GROUPS else None
    if oldest and tuple(int(v) for v in ort.__version__.split(".")[:2]) < oldest:
        pytest.skip(f"onnxruntime {ort.__version__}'s CPU EP cannot compute this group's reference (needs "
                    f"{oldest[0]}.{oldest[1]})")
    result = runner.result(group, variant)
    assert len(result.compiled_ops) == 1, "the whole group is one partition, compiled once"
    assert op.op_type in result.compiled_ops[0]
    tol = 1e-2 if variant.startswith("float16") else 1e-5
    for got, want in zip(result.got, result.want, strict=True):
        g, w = got[op.ident], want[op.ident]
        assert g.shape == w.shape
        if variant.startswith("float16") and w.dtype == np.float32:
            assert g.dtype == np.float16
        else:
            assert g.dtype == w.dtype
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=tol, atol=tol)


def test_every_supported_op_is_covered() -> None:
    # BiasAdd: onnxruntime has it on its CUDA EP only (compiler tests check it against its definition)
    covered = {(op.domain or "ai.onnx", op.op_type) for g in GROUPS.values() for op in g.ops} | {(MS, "BiasAdd")}
    supported = {(d, op) for d, ops in hipdnn_ep_compiler.supported_ops().items() for op in ops}
    assert supported - covered == set(), "add the new operators to a group"
    assert covered - supported == set()


assert SPY.is_file()
