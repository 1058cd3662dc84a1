"""What every CPU kernel checks, through the testing hook: the manifest lists the kernels the
test_cpu_*.py files test, each kernel refuses wrong input, output and attribute counts and output
shapes, the error paths name the kernel, and each accepts exactly the dtypes the manifest states."""

from __future__ import annotations

import kernel_util
import numpy as np
import pytest
from kernel_util import (
    BINARY,
    BOOL,
    DTYPE,
    ENUMS,
    F16,
    F32,
    I32,
    I64,
    KERNELS,
    REDUCE,
    UNARY,
    UNSUPPORTED,
    InvalidArgumentError,
    _core,
    call_raw,
)

state = kernel_util.state  # one CPU state per module




def test_manifest_lists_the_kernels_tested_here():
    tested = {"binary", "unary", "cast", "where", "matmul", "gemm", "softmax", "layer_norm", "reduce",
              "transpose", "concat", "slice", "gather", "expand", "range", "fill", "gather_elements", "cumsum", "trilu",
              "arg_reduce", "scatter_nd", "pad", "gather_nd", "scatter_elements", "top_k",
              # the LLM kernels: test_llm_kernels.py
              "matmul_nbits", "matmul_nbits_silu_mul", "rms_norm", "rotary_embedding", "group_query_attention",
              "attention", "skip_layer_norm",
              # the vision kernels: test_vision_kernels.py
              "conv", "pool", "max_pool_indices", "batch_norm", "activation", "conv_transpose", "resize",
              "grid_sample",
              # the quantization kernels: test_quant_kernels.py
              "quantize_linear", "dequantize_linear", "dynamic_quantize_linear", "matmul_integer", "conv_integer"}
    assert set(KERNELS) == {"hipdnn_ep_kernel_" + k for k in tested}


# ---------------------------------------------------------------- errors through the hook

# A well-formed call of each kernel, to break one way at a time (outputs zeroed: _retyped casts them, and
# casting np.empty's garbage warns, which the suite's filterwarnings makes an error).
def good_call(kernel):
    f = np.ones((2, 3), F32)
    o = np.zeros((2, 3), F32)
    return {
        "binary": ([f, f], [o], [BINARY["ADD"]], []),
        "unary": ([f], [o], [UNARY["RELU"]], []),
        "cast": ([f], [o], [1], []),  # saturate; ABI 1.1/1.2 artifacts pass none (test_cpu_float8_types)
        "where": ([np.ones((2, 3), BOOL), f, f], [o], [], []),
        "matmul": ([f, np.ones((3, 2), F32)], [np.zeros((2, 2), F32)], [], []),
        "gemm": ([f, np.ones((3, 2), F32)], [np.zeros((2, 2), F32)], [0, 0], [1.0, 1.0]),
        "softmax": ([f], [o], [1], []),
        "layer_norm": ([f, np.ones(3, F32)], [o], [1], [1e-5]),
        "reduce": ([f, np.array([1], I64)], [np.zeros(2, F32)], [REDUCE["SUM"]], []),
        "transpose": ([f, np.array([1, 0], I64)], [np.zeros((3, 2), F32)], [], []),
        "concat": ([f, f], [np.zeros((4, 3), F32)], [0], []),
        "slice": ([f, np.array([0, 0], I64), np.array([1, 1], I64)], [o], [], []),
        "gather": ([f, np.array([1], I64)], [np.zeros((1, 3), F32)], [0], []),
        "expand": ([np.ones((1, 3), F32)], [o], [], []),
        "range": ([np.array([0, 1], I64)], [np.zeros(3, I64)], [], []),
        "fill": ([], [o], [0], []),
        "cumsum": ([f], [o], [1, 0, 0], []),
        "trilu": ([f, np.array([0], I64)], [o], [1], []),
        "gather_elements": ([f, np.zeros((2, 2), I64)], [np.zeros((2, 2), F32)], [1], []),
        "arg_reduce": ([f], [np.zeros(2, I64)], [1, 0, 0], []),
        "scatter_nd": ([f, np.zeros((1, 1), I64), np.ones((1, 3), F32)], [o], [0], []),
        "pad": ([f, np.zeros(1, F32), np.array([0, 1, 0, 0], I64)], [np.zeros((2, 4), F32)], [0], []),
        "gather_nd": ([f, np.zeros((1, 1), I64)], [np.zeros((1, 3), F32)], [0], []),
        "scatter_elements": ([f, np.zeros((2, 2), I64), np.ones((2, 2), F32)], [o], [1, 0], []),
        "top_k": ([f], [np.zeros((2, 2), F32), np.zeros((2, 2), I64)], [1, 1, 1], []),
        "matmul_nbits": ([np.ones((2, 32), F32), np.ones((3, 1, 16), np.uint8), np.ones((3, 1), F32),
                          np.ones((3, 1), np.uint8)], [np.zeros((2, 3), F32)], [32, 3, 4, 32], []),
        "matmul_nbits_silu_mul": ([np.ones((2, 32), F32), np.ones((3, 1, 16), np.uint8), np.ones((3, 1), F32),
                                   np.ones((3, 1), np.uint8), np.ones((3, 1, 16), np.uint8), np.ones((3, 1), F32),
                                   np.ones((3, 1), np.uint8)], [np.zeros((2, 3), F32)], [32, 3, 4, 32], []),
        "rms_norm": ([f, np.ones(3, F32)], [o], [1], [1e-5]),
        "skip_layer_norm": ([f, np.ones(3, F32), np.ones(3, F32), f], [o], [1], [1e-5]),
        "rotary_embedding": ([np.ones((1, 2, 4), F32), np.zeros((1, 2), I64), np.ones((4, 2), F32),
                              np.ones((4, 2), F32)], [np.zeros((1, 2, 4), F32)], [0, 1, 0], []),
        "group_query_attention": ([np.ones((1, 1, 8), F32), np.ones((1, 1, 8), F32), np.ones((1, 1, 8), F32),
                                   np.ones((1, 1, 0, 8), F32), np.ones((1, 1, 0, 8), F32), np.zeros(1, I32),
                                   np.ones(1, I32)],
                                  [np.zeros((1, 1, 8), F32), np.zeros((1, 1, 1, 8), F32), np.zeros((1, 1, 1, 8), F32)],
                                  [1, 1, -1, 0, 0], [0.0, 0.0]),
        "attention": ([np.ones((1, 2, 8), F32), np.ones((1, 3, 8), F32), np.ones((1, 3, 8), F32),
                       np.ones((1, 1, 1, 3), BOOL)], [np.zeros((1, 2, 8), F32)], [2, 2, 0], [0.0, 0.0]),
        # the vision kernels
        "conv": ([np.ones((1, 2, 3, 3), F32), np.ones((2, 2, 1, 1), F32), np.ones(2, F32),
                  np.array([1, 1, 0, 0, 1, 1], I64)], [np.zeros((1, 2, 3, 3), F32)], [1], []),
        "pool": ([np.ones((1, 2, 3, 3), F32), np.array([1, 1, 1, 1, 0, 0, 0, 0, 1, 1], I64)],
                 [np.zeros((1, 2, 3, 3), F32)], [0, 0], []),
        "max_pool_indices": ([np.ones((1, 2, 3, 3), F32), np.array([1, 1, 1, 1, 0, 0, 0, 0, 1, 1], I64)],
                             [np.zeros((1, 2, 3, 3), F32), np.zeros((1, 2, 3, 3), I64)], [0], []),
        "batch_norm": ([np.ones((1, 2, 3), F32)] + [np.ones(2, F32)] * 4, [np.zeros((1, 2, 3), F32)], [], [1e-5]),
        "activation": ([f], [o], [0], [0.5, 0.5]),
        "conv_transpose": ([np.ones((1, 2, 3, 3), F32), np.ones((2, 2, 1, 1), F32), np.ones(2, F32),
                            np.array([1, 1, 0, 0, 1, 1], I64)], [np.zeros((1, 2, 3, 3), F32)], [1], []),
        # scales 0 (output / input), roi 0 (read in tf_crop_and_resize mode only)
        "resize": ([f, np.zeros(6, I64)], [o], [0, 0, 0, 0, 0], [-0.75, 0.0]),
        "grid_sample": ([np.ones((1, 1, 2, 2), F32), np.zeros((1, 2, 2, 2), F32)], [np.zeros((1, 1, 2, 2), F32)],
                        [0, 0, 0], []),
        # the quantization kernels
        "quantize_linear": ([f, np.ones(3, F32)], [np.empty((2, 3), np.int8)], [1, 0], []),
        "dequantize_linear": ([np.ones((2, 3), np.uint8), np.ones(3, F32)], [o], [1, 0], []),
        "dynamic_quantize_linear": ([f], [np.empty((2, 3), np.uint8), np.empty((), F32), np.empty((), np.uint8)],
                                    [], []),
        "matmul_integer": ([np.ones((2, 3), np.uint8), np.ones((3, 2), np.int8)], [np.empty((2, 2), I32)], [], []),
        "conv_integer": ([np.ones((1, 2, 3, 3), np.uint8), np.ones((2, 2, 1, 1), np.int8), np.array(0, np.uint8),
                          np.array(0, np.int8), np.array([1, 1, 0, 0, 1, 1], I64)], [np.empty((1, 2, 3, 3), I32)],
                         [1], []),
    }[kernel]


KERNEL_NAMES = sorted(k.removeprefix("hipdnn_ep_kernel_") for k in KERNELS)


@pytest.mark.parametrize("kernel", KERNEL_NAMES)
def test_good_calls_succeed(state, kernel):
    call_raw(state, kernel, *good_call(kernel))


@pytest.mark.parametrize("kernel", KERNEL_NAMES)
def test_wrong_input_count_names_the_kernel(state, kernel):
    inputs, outputs, ints, floats = good_call(kernel)
    wrong = [] if inputs else [np.ones(1, F32)]  # fill takes none
    with pytest.raises(InvalidArgumentError, match=rf"^hipdnn_ep_kernel_{kernel}: expected .*inputs, got {len(wrong)}"):
        call_raw(state, kernel, wrong, outputs, ints, floats)


@pytest.mark.parametrize("kernel", KERNEL_NAMES)
def test_wrong_output_count_names_the_kernel(state, kernel):
    inputs, outputs, ints, floats = good_call(kernel)
    expected = rf"^hipdnn_ep_kernel_{kernel}: expected \d outputs, got {3 * len(outputs)}"
    with pytest.raises(InvalidArgumentError, match=expected):
        call_raw(state, kernel, inputs, outputs * 3, ints, floats)


@pytest.mark.parametrize("kernel", KERNEL_NAMES)
def test_wrong_attribute_count_names_the_kernel(state, kernel):
    inputs, outputs, ints, floats = good_call(kernel)
    with pytest.raises(InvalidArgumentError, match=rf"^hipdnn_ep_kernel_{kernel}: expected {len(ints)} int attributes"):
        call_raw(state, kernel, inputs, outputs, ints + [0], floats)
    with pytest.raises(InvalidArgumentError, match=rf"^hipdnn_ep_kernel_{kernel}: expected {len(floats)} float attr"):
        call_raw(state, kernel, inputs, outputs, ints, floats + [0.0])


@pytest.mark.parametrize("kernel", [k for k in KERNEL_NAMES if k != "fill"])  # fill takes any shape
def test_wrong_output_shape_names_the_kernel(state, kernel):
    inputs, outputs, ints, floats = good_call(kernel)
    bad = np.empty(outputs[0].shape + (2,), outputs[0].dtype)
    with pytest.raises(InvalidArgumentError, match=rf"^hipdnn_ep_kernel_{kernel}: .*output 0 has (dims|rank)|"
                                                   rf"^hipdnn_ep_kernel_{kernel}: input dims .* do not broadcast"):
        call_raw(state, kernel, inputs, [bad, *outputs[1:]], ints, floats)


# (kernel, inputs, outputs, ints, floats, exception, message regex)
X = np.ones((2, 3), F32)
Y = np.empty((2, 3), F32)
ERROR_CASES = {
    "binary_unknown_op": ("binary", [X, X], [Y], [99], [], InvalidArgumentError, "unknown binary op 99"),
    "binary_dtype_mismatch": ("binary", [X, np.ones((2, 3), I64)], [Y], [0], [], InvalidArgumentError,
                              "different dtypes FLOAT32 and INT64"),
    "binary_mod_float64": ("binary", [np.ones(2), np.ones(2)], [np.empty(2)], [BINARY["MOD"]], [], UNSUPPORTED,
                           "binary op MOD does not support dtype FLOAT64"),
    "binary_pow_int": ("binary", [np.ones(2, np.int16)] * 2, [np.empty(2, np.int16)], [BINARY["POW"]], [], UNSUPPORTED,
                       "binary op POW does not support dtype INT16"),
    "binary_no_broadcast": ("binary", [X, np.ones((4,), F32)], [Y], [0], [], InvalidArgumentError,
                            r"input dims \[2, 3\] and \[4\] do not broadcast"),
    "binary_compare_writes_bool": ("binary", [X, X], [Y], [BINARY["LESS"]], [], InvalidArgumentError,
                                   "output 0 has dtype FLOAT32, expected BOOL"),
    "binary_int_div_by_zero": ("binary", [np.ones(2, I32), np.zeros(2, I32)], [np.empty(2, I32)], [BINARY["DIV"]],
                               [], InvalidArgumentError, "integer division by zero"),
    "unary_unknown_op": ("unary", [X], [Y], [-1], [], InvalidArgumentError, "unknown unary op -1"),
    "unary_exp_int": ("unary", [np.ones(2, I64)], [np.empty(2, I64)], [UNARY["EXP"]], [], UNSUPPORTED,
                      "unary op EXP does not support dtype INT64"),
    "cast_shape": ("cast", [X], [np.empty((3, 2), I64)], [], [], InvalidArgumentError,
                   r"output 0 has dims \[3, 2\], expected \[2, 3\]"),
    "where_cond_not_bool": ("where", [X, X, X], [Y], [], [], UNSUPPORTED, "cond.* expected BOOL"),
    "where_xy_dtypes": ("where", [np.ones(2, BOOL), np.ones(2, F32), np.ones(2, I64)], [np.empty(2, F32)], [], [],
                        InvalidArgumentError, "input 2 has dtype INT64, expected FLOAT32"),
    "matmul_k_mismatch": ("matmul", [X, X], [Y], [], [], InvalidArgumentError, "inner dims differ"),
    "matmul_batch": ("matmul", [np.ones((2, 2, 3), F32), np.ones((3, 3, 1), F32)], [np.empty((3, 2, 1), F32)], [],
                     [], InvalidArgumentError, r"batch dims \[2\] and \[3\] do not broadcast"),
    "matmul_rank0": ("matmul", [np.ones((), F32), X], [Y], [], [], InvalidArgumentError, "rank >= 1"),
    "matmul_int": ("matmul", [np.ones((2, 2), I64)] * 2, [np.empty((2, 2), I64)], [], [], UNSUPPORTED,
                   "matmul does not support dtype INT64"),
    "gemm_trans_value": ("gemm", [X, X], [Y], [2, 0], [1.0, 1.0], InvalidArgumentError, "trans_a is 2"),
    "gemm_rank": ("gemm", [np.ones(3, F32), X], [Y], [0, 0], [1.0, 1.0], InvalidArgumentError, "must both have rank 2"),
    "gemm_k": ("gemm", [X, X], [np.empty((2, 3), F32)], [0, 0], [1.0, 1.0], InvalidArgumentError,
               "op\\(A\\) has K = 3 but op\\(B\\) has K = 2"),
    "gemm_c_shape": ("gemm", [X, np.ones((3, 2), F32), np.ones((3,), F32)], [np.empty((2, 2), F32)], [0, 0],
                     [1.0, 1.0], InvalidArgumentError, r"C dims \[3\] do not broadcast to \[2, 2\]"),
    "softmax_axis": ("softmax", [X], [Y], [2], [], InvalidArgumentError, "axis 2 is out of range for rank 2"),
    "softmax_negative_axis": ("softmax", [X], [Y], [-1], [], InvalidArgumentError, "axis -1 is out of range"),
    "layer_norm_scale": ("layer_norm", [X, np.ones(2, F32)], [Y], [1], [1e-5], InvalidArgumentError,
                         r"Scale dims \[2\] do not broadcast to the normalized dims \[3\]"),
    "layer_norm_epsilon": ("layer_norm", [X, np.ones(3, F32)], [Y], [1], [-1.0], InvalidArgumentError, "epsilon"),
    "reduce_unknown_op": ("reduce", [X, np.array([1], I64)], [np.empty(2, F32)], [10], [], InvalidArgumentError,
                          "unknown reduce op 10"),
    "reduce_axis_range": ("reduce", [X, np.array([2], I64)], [np.empty(2, F32)], [0], [], InvalidArgumentError,
                          "axis 2 is out of range"),
    "reduce_axis_twice": ("reduce", [X, np.array([1, 1], I64)], [np.empty(2, F32)], [0], [], InvalidArgumentError,
                          "axis 1 is listed twice"),
    "reduce_axes_dtype": ("reduce", [X, np.array([1], I32)], [np.empty(2, F32)], [0], [], UNSUPPORTED,
                          "axes.* expected INT64"),
    "reduce_output_rank": ("reduce", [X, np.array([1], I64)], [np.empty((1, 1, 1), F32)], [0], [],
                           InvalidArgumentError, "output 0 has rank 3, expected 2 \\(keepdims\\) or 1"),
    "reduce_mean_int": ("reduce", [np.ones((2, 3), I64), np.array([1], I64)], [np.empty(2, I64)],
                        [REDUCE["MEAN"]], [], UNSUPPORTED, "reduce op MEAN does not support dtype INT64"),
    "transpose_not_perm": ("transpose", [X, np.array([0, 0], I64)], [Y], [], [], InvalidArgumentError,
                           r"perm \[0, 0\] is not a permutation"),
    "transpose_perm_length": ("transpose", [X, np.array([0], I64)], [Y], [], [], InvalidArgumentError,
                              "perm has 1 entries for input rank 2"),
    "concat_mismatch": ("concat", [X, np.ones((2, 4), F32)], [np.empty((4, 3), F32)], [0], [], InvalidArgumentError,
                        r"input 1 dims \[2, 4\] differ from input 0 dims \[2, 3\] outside axis 0"),
    "concat_dtype": ("concat", [X, np.ones((2, 3), I64)], [np.empty((4, 3), F32)], [0], [], InvalidArgumentError,
                     "input 1 has dtype INT64"),
    "slice_zero_step": ("slice", [X, np.array([0, 0], I64), np.array([1, 0], I64)], [Y], [], [], InvalidArgumentError,
                        "step is 0 on axis 1"),
    "slice_out_of_range": ("slice", [X, np.array([0, 2], I64), np.array([1, 1], I64)], [Y], [], [],
                           InvalidArgumentError, "start 2, step 1 and count 3 on axis 1 leave the input dim 3"),
    "slice_start_length": ("slice", [X, np.array([0], I64), np.array([1, 1], I64)], [Y], [], [],
                           InvalidArgumentError, "starts and steps have 1 and 2 entries for input rank 2"),
    "gather_index_range": ("gather", [X, np.array([2], I64)], [np.empty((1, 3), F32)], [0], [], InvalidArgumentError,
                           "index 2 at position 0 is out of range for axis 0 of size 2"),
    "gather_negative_range": ("gather", [X, np.array([-3], I32)], [np.empty((1, 3), F32)], [0], [],
                              InvalidArgumentError, "index -3 .* out of range"),
    "gather_index_dtype": ("gather", [X, np.array([1], F32)], [np.empty((1, 3), F32)], [0], [], UNSUPPORTED,
                           "indices.* expected INT32 or INT64"),
    "expand_not_broadcast": ("expand", [np.ones((2,), F32)], [Y], [], [], InvalidArgumentError,
                             r"input dims \[2\] do not broadcast to output dims \[2, 3\]"),
}


@pytest.mark.parametrize("case", sorted(ERROR_CASES))
def test_error_paths(state, case):
    kernel, inputs, outputs, ints, floats, exc, message = ERROR_CASES[case]
    with pytest.raises(RuntimeError if exc is UNSUPPORTED else exc,
                       match=rf"^hipdnn_ep_kernel_{kernel}: .*{message}") as info:
        call_raw(state, kernel, inputs, outputs, ints, floats)
    if exc is UNSUPPORTED:
        assert not isinstance(info.value, InvalidArgumentError)


# ---------------------------------------------------------------- element types: the manifest's rules

def _dtype_code(array):
    return DTYPE[array.dtype.name.upper()]  # numpy's names are the manifest's, lower-case


def _retyped(inputs, outputs, index, dtype):
    """good_call's arrays with input `index` in `dtype`; for input 0 also every array that shares its dtype
    (the same-type operands and the output), as a well-typed call of that dtype would have them."""
    ones, outs, _ = _retyped_codes(inputs, outputs, index, dtype, -1)
    return ones, outs


def _retyped_codes(inputs, outputs, index, dtype, code_of_new):
    """_retyped, and call_kernel's dtypes: code_of_new for the retyped arrays (-1: their numpy type's)."""
    code = _dtype_code(inputs[index])
    moved_in = [i == index or (index == 0 and _dtype_code(a) == code) for i, a in enumerate(inputs)]
    moved_out = [index == 0 and _dtype_code(o) == code for o in outputs]
    ones = [a.astype(dtype) if m else a for a, m in zip(inputs, moved_in, strict=True)]
    with np.errstate(over="ignore", invalid="ignore"):  # outputs from np.empty hold garbage that may not fit
        outs = [o.astype(dtype) if m else o for o, m in zip(outputs, moved_out, strict=True)]
    return ones, outs, [code_of_new if m else -1 for m in moved_in + moved_out]


def _dtype_rule_cases():
    """(kernel, op, input, dtype name, accepted) for every rule the manifest states, and every dtype."""
    names = sorted(DTYPE, key=DTYPE.get)
    for name, fn in sorted(KERNELS.items()):
        kernel = name.removeprefix("hipdnn_ep_kernel_")
        table = fn["dtypes"]
        ops = list(ENUMS[fn["op_enum"]]) if fn["op_enum"] else [None]
        if table:
            for op in ops:
                accepted = table.get(op, table.get("default"))
                yield from ((kernel, op, 0, d, d in accepted) for d in names)
        for index, accepted in fn["input_dtypes"].items():
            yield from ((kernel, ops[0], int(index), d, d in accepted) for d in names)


NUMPY_OF = {"FLOAT32": F32, "UINT8": np.uint8, "INT8": np.int8, "INT32": I32, "INT64": I64, "BOOL": BOOL,
            "FLOAT16": F16, "FLOAT64": np.float64, "INT16": np.int16, "UINT16": np.uint16, "UINT32": np.uint32,
            "UINT64": np.uint64}
# numpy cannot name these: arrays of their bit patterns, the type given to call_kernel (dtypes)
NARROW_STORAGE = {"BFLOAT16": np.uint16, "FLOAT8E4M3FN": np.uint8, "FLOAT8E4M3FNUZ": np.uint8, "FLOAT8E5M2": np.uint8,
                  "FLOAT8E5M2FNUZ": np.uint8}


@pytest.mark.parametrize("kernel,op,index,dtype,accepted", list(_dtype_rule_cases()))
def test_kernels_accept_exactly_the_manifest_dtypes(state, kernel, op, index, dtype, accepted):
    """The runtime's validation follows the manifest's dtypes tables (the compiler reads the same tables)."""
    inputs, outputs, ints, floats = good_call(kernel)
    fn = KERNELS["hipdnn_ep_kernel_" + kernel]
    if op is not None:
        ints = list(ints)
        ints[fn["int_attrs"].index("op")] = ENUMS[fn["op_enum"]][op]
    narrow = dtype in NARROW_STORAGE
    inputs, outputs, codes = _retyped_codes(inputs, outputs, index, NARROW_STORAGE.get(dtype, NUMPY_OF.get(dtype)),
                                            DTYPE[dtype] if narrow else -1)
    if (kernel == "binary" and op in ("EQUAL", "LESS", "GREATER", "GREATER_OR_EQUAL", "LESS_OR_EQUAL", "AND", "OR",
                                      "XOR")) or (kernel == "unary" and op == "IS_NAN"):
        outputs = [o.astype(BOOL) for o in outputs]
        codes[len(inputs):] = [-1] * len(outputs)
    if kernel == "range":  # input 0 is the (start, delta) parameter; the output keeps its INT64
        outputs = [o.astype(I64) for o in outputs]
        codes[len(inputs):] = [-1] * len(outputs)
    if kernel == "conv_integer" and index == 1:  # w_zero_point has W's dtype
        inputs[3] = inputs[3].astype(NARROW_STORAGE.get(dtype, NUMPY_OF.get(dtype)))
        codes[3] = codes[1]
    if kernel == "dequantize_linear" and index == 1:  # the output has the scale's dtype
        if narrow:
            codes[len(inputs)] = DTYPE[dtype]
        outputs = [o.astype(NARROW_STORAGE.get(dtype, NUMPY_OF.get(dtype))) for o in outputs]
    if accepted:
        _core.call_kernel(state, "hipdnn_ep_kernel_" + kernel, inputs, outputs, list(ints), list(floats), codes)
        return
    with pytest.raises(RuntimeError, match=rf"^hipdnn_ep_kernel_{kernel}: .*{dtype}") as info:
        _core.call_kernel(state, "hipdnn_ep_kernel_" + kernel, inputs, outputs, list(ints), list(floats), codes)
    assert not isinstance(info.value, InvalidArgumentError)
