"""refine-shapes: IR in, IR out."""

from __future__ import annotations

import pytest

from hipdnn_ep_compiler import checks
from hipdnn_ep_compiler import ir as hir
from hipdnn_ep_compiler import symbolic as sym
from hipdnn_ep_compiler.errors import ModelError, UnsupportedError
from hipdnn_ep_compiler.passes import refine_shapes, run_pass

SHAPE_CHAIN = '''
func.func @main(%arg0: tensor<?x?x8xf32>) -> tensor<?x?x?xf32> {
  %0 = "onnx.shape"(%arg0) {operand_roles = [0 : i64], "onnx.node" = "node 's'"} : (tensor<?x?x8xf32>) -> tensor<3xi64>
  %1 = "hipdnn.constant"() {name = "i", values = [1]} : () -> tensor<i64>
  %2 = "onnx.gather"(%0, %1) {operand_roles = [0 : i64, 1 : i64], "onnx.axis" = 0 : i64, "onnx.node" = "node 'g'"} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %3 = "hipdnn.constant"() {name = "a", values = [0]} : () -> tensor<1xi64>
  %4 = "onnx.unsqueeze"(%2, %3) {operand_roles = [0 : i64, 1 : i64], "onnx.node" = "node 'u'"} : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %5 = "hipdnn.constant"() {name = "m", values = [-1, 4]} : () -> tensor<2xi64>
  %6 = "onnx.concat"(%5, %4) {operand_roles = [0 : i64, 1 : i64], "onnx.axis" = 0 : i64, "onnx.node" = "node 'c'"} : (tensor<2xi64>, tensor<1xi64>) -> tensor<3xi64>
  %7 = "onnx.reshape"(%arg0, %6) {operand_roles = [0 : i64, 1 : i64], "onnx.node" = "node 'r'"} : (tensor<?x?x8xf32>, tensor<3xi64>) -> tensor<?x?x?xf32>
  return %7 : tensor<?x?x?xf32>
}
'''


def _run(text: str) -> str:
    module = hir.ir.Module.parse(text, hir.new_context())
    run_pass(module, refine_shapes.NAME)
    assert module.operation.verify()
    return str(module)


def _refined(text: str) -> hir.ir.Module:
    module = hir.ir.Module.parse(text, hir.new_context())
    run_pass(module, refine_shapes.NAME)
    assert module.operation.verify()
    return module


def _dims(module: hir.ir.Module, name: str, k: int = 0) -> list[str]:
    """The dims of the k-th op named `name`, read back from the IR's index values."""
    op = [o for o in hir.ops(module) if o.name == name][k]
    return [sym.to_str(d) for d in hir.dims_of(op.results[0])]


def _host(module: hir.ir.Module, k: int) -> list[str]:
    op = [o for o in hir.ops(module) if o.name == "hipdnn.host_tensor"][k]
    return [sym.to_str(v) for v in hir.host_values(op.results[0])]


def test_shape_gather_concat_fold_into_host_values_and_reshape_becomes_alias():
    module = _refined(SHAPE_CHAIN)
    out = str(module)
    # Shape/Gather/Unsqueeze/Concat are host tensors whose elements are index values over input dims
    assert _host(module, 0) == ["d0_0", "d0_1", "8"]
    assert ["-1", "4", "d0_1"] in [_host(module, k) for k in range(4)]
    # Reshape: the -1 is inferred symbolically, the shape operand is gone
    assert _dims(module, "hipdnn.alias") == ["(mul 2 d0_0)", "4", "d0_1"]
    assert '"hipdnn.alias"(%arg0)' in out and "tensor<?x4x?xf32>" in out
    for folded in ("onnx.shape", "onnx.gather", "onnx.concat", "onnx.reshape", "onnx.unsqueeze"):
        assert f'"{folded}"' not in out


def test_broadcast_and_matmul_dims():
    out = _run('''
func.func @main(%arg0: tensor<?x1x4xf32>, %arg1: tensor<3x4x5xf32>, %arg2: tensor<3x4xf32>) -> tensor<?x3x4xf32> {
  %0 = "onnx.add"(%arg0, %arg2) {operand_roles = [0 : i64, 1 : i64]} : (tensor<?x1x4xf32>, tensor<3x4xf32>) -> tensor<?x3x4xf32>
  %1 = "onnx.matmul"(%arg0, %arg1) {operand_roles = [0 : i64, 1 : i64]} : (tensor<?x1x4xf32>, tensor<3x4x5xf32>) -> tensor<?x3x1x5xf32>
  return %0 : tensor<?x3x4xf32>
}''')
    module = hir.ir.Module.parse(out, hir.new_context())
    assert _dims(module, "hipdnn.binary") == ["d0_0", "3", "4"]
    assert _dims(module, "hipdnn.matmul") == ["3", "1", "5"]
    # the batch dim broadcasts d0_0 against 3: valid only when d0_0 is 1 or 3, so it is 3
    assert 'op = "ADD"' in out


def test_slice_normalizes_starts_and_counts_symbolically():
    out = _run('''
func.func @main(%arg0: tensor<?xf32>) -> tensor<?xf32> {
  %0 = "hipdnn.constant"() {name = "s", values = [-3]} : () -> tensor<1xi64>
  %1 = "hipdnn.constant"() {name = "e", values = [100]} : () -> tensor<1xi64>
  %2 = "onnx.slice"(%arg0, %0, %1) {operand_roles = [0 : i64, 1 : i64, 2 : i64]} : (tensor<?xf32>, tensor<1xi64>, tensor<1xi64>) -> tensor<?xf32>
  return %2 : tensor<?xf32>
}''')
    module = hir.ir.Module.parse(out, hir.new_context())
    [op] = [o for o in hir.ops(module) if o.name == "hipdnn.slice"]
    assert [sym.to_str(v) for v in hir.param_values(op, "starts")] == ["(min (max (add -3 d0_0) 0) d0_0)"]
    assert "steps = [1]" in out


def test_reshape_target_of_unknown_length_is_refused_naming_node():
    with pytest.raises(UnsupportedError, match="node 'r'.*target shape"):
        _run('''
func.func @main(%arg0: tensor<4xf32>, %arg1: tensor<?xi64>) -> tensor<*xf32> {
  %0 = "onnx.reshape"(%arg0, %arg1) {operand_roles = [0 : i64, 1 : i64], "onnx.node" = "node 'r'"} : (tensor<4xf32>, tensor<?xi64>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}''')


def test_reshape_target_read_from_a_small_input_resolves_0_and_minus_1_at_run_time():
    out = _run('''
func.func @main(%arg0: tensor<?x6xf32>, %arg1: tensor<2xi64>) -> tensor<?x?xf32> {
  %0 = "onnx.reshape"(%arg0, %arg1) {operand_roles = [0 : i64, 1 : i64], "onnx.node" = "node 'r'"} : (tensor<?x6xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}''')
    from hipdnn_ep_compiler import symbolic as sym
    module = hir.ir.Module.parse(out, hir.new_context())
    alias = hir.ops(module)[0]
    assert alias.name == "hipdnn.alias"
    dims = hir.dims_of(alias.results[0])
    relations = checks.read(hir.main_func(module))
    for v0, v1, rows, want in [(0, -1, 2, [2, 6]), (-1, 3, 4, [8, 3]), (3, 4, 2, [3, 4])]:
        env = {"v1_0": v0, "v1_1": v1, "d0_0": rows}
        assert [sym.evaluate(d, env) for d in dims] == want
        assert all(c.holds(env) for c in relations)
    # what the program refuses at run time, and how the runtime words it
    refused = {(5, -1, 2): "input shape [2, 6] has 12 elements but target shape [5, -1] (resolved to [5, 2]) has 10",
               (-1, -1, 1): "target shape [-1, -1] has 2 entries equal to -1; at most one may be -1",
               (-3, 2, 1): "target shape [-3, 2] has -3 at index 0; entries must be >= -1",
               (4, 4, 1): "input shape [1, 6] has 6 elements but target shape [4, 4] (resolved to [4, 4]) has 16"}
    for (v0, v1, rows), message in refused.items():
        env = {"v1_0": v0, "v1_1": v1, "d0_0": rows}
        failed = next(c for c in relations if not c.holds(env))
        assert failed.message(env) == "node 'r': " + message


def test_reshape_that_changes_the_element_count_is_refused_at_compile_time_when_static():
    with pytest.raises(ModelError, match=r"node 'r': input shape \[6\] has 6 elements but target shape \[4, 2\] has 8"):
        _run('''
func.func @main(%arg0: tensor<6xf32>) -> tensor<4x2xf32> {
  %0 = "hipdnn.constant"() {name = "s", values = [4, 2]} : () -> tensor<2xi64>
  %1 = "onnx.reshape"(%arg0, %0) {operand_roles = [0 : i64, 1 : i64], "onnx.node" = "node 'r'"} : (tensor<6xf32>, tensor<2xi64>) -> tensor<4x2xf32>
  return %1 : tensor<4x2xf32>
}''')


def test_reshape_of_a_dynamic_input_to_a_constant_target_is_checked_at_run_time():
    module = hir.ir.Module.parse('''
func.func @main(%arg0: tensor<?xf32>) -> tensor<?x4xf32> {
  %0 = "hipdnn.constant"() {name = "s", values = [-1, 4]} : () -> tensor<2xi64>
  %1 = "onnx.reshape"(%arg0, %0) {operand_roles = [0 : i64, 1 : i64], "onnx.node" = "node 'r'"} : (tensor<?xf32>, tensor<2xi64>) -> tensor<?x4xf32>
  return %1 : tensor<?x4xf32>
}''', hir.new_context())
    run_pass(module, refine_shapes.NAME)
    [check] = checks.read(hir.main_func(module))
    assert check.holds({"d0_0": 8})
    assert not check.holds({"d0_0": 6})  # -1 is 6 / 4 = 1 (truncated): 4 elements, not 6
    assert check.message({"d0_0": 6}) == ("node 'r': input shape [6] has 6 elements but target shape [-1, 4] "
                                          "(resolved to [1, 4]) has 4")


def test_squeeze_of_an_axis_that_is_not_1_is_refused():
    with pytest.raises(ModelError, match="node 'q': axis 0 of input shape \\[3, 1\\] has size 3"):
        _run('''
func.func @main(%arg0: tensor<3x1xf32>) -> tensor<1xf32> {
  %0 = "hipdnn.constant"() {name = "a", values = [0]} : () -> tensor<1xi64>
  %1 = "onnx.squeeze"(%arg0, %0) {operand_roles = [0 : i64, 1 : i64], "onnx.node" = "node 'q'"} : (tensor<3x1xf32>, tensor<1xi64>) -> tensor<1xf32>
  return %1 : tensor<1xf32>
}''')


def test_static_dims_whose_size_overflows_int64_are_a_model_error():
    with pytest.raises(ModelError, match="node 'e'.*more than int64 can address"):
        _run('''
func.func @main(%arg0: tensor<1x1xf32>) -> tensor<?x?xf32> {
  %0 = "hipdnn.constant"() {name = "s", values = [1099511627776, 1099511627776]} : () -> tensor<2xi64>
  %1 = "onnx.expand"(%arg0, %0) {operand_roles = [0 : i64, 1 : i64], "onnx.node" = "node 'e'"} : (tensor<1x1xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return %1 : tensor<?x?xf32>
}''')


def test_incompatible_static_broadcast_is_a_model_error():
    with pytest.raises(ModelError, match="node 'a'.*3 and 4"):
        _run('''
func.func @main(%arg0: tensor<3xf32>, %arg1: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "onnx.add"(%arg0, %arg1) {operand_roles = [0 : i64, 1 : i64], "onnx.node" = "node 'a'"} : (tensor<3xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}''')


def test_reduce_keepdims_other_than_1_drops_the_axes_like_onnx_runtime():
    out = _run('''
func.func @main(%arg0: tensor<3x4xf32>) -> tensor<3xf32> {
  %0 = "hipdnn.constant"() {name = "a", values = [1]} : () -> tensor<1xi64>
  %1 = "onnx.reduce_sum"(%arg0, %0) {operand_roles = [0 : i64, 1 : i64], "onnx.keepdims" = 2 : i64} : (tensor<3x4xf32>, tensor<1xi64>) -> tensor<3xf32>
  return %1 : tensor<3xf32>
}''')
    assert _dims(hir.ir.Module.parse(out, hir.new_context()), "hipdnn.reduce") == ["3"]


def test_reduce_axes_that_are_not_1d_are_a_model_error():
    with pytest.raises(ModelError, match="node 'r': the axes input has rank 0; it must be 1-D"):
        _run('''
func.func @main(%arg0: tensor<3x4xf32>) -> tensor<3xf32> {
  %0 = "hipdnn.constant"() {name = "a", values = [1]} : () -> tensor<i64>
  %1 = "onnx.reduce_sum"(%arg0, %0) {operand_roles = [0 : i64, 1 : i64], "onnx.node" = "node 'r'"} : (tensor<3x4xf32>, tensor<i64>) -> tensor<3xf32>
  return %1 : tensor<3xf32>
}''')


def _relations(text: str) -> list:
    module = hir.ir.Module.parse(text, hir.new_context())
    run_pass(module, refine_shapes.NAME)
    return checks.read(hir.main_func(module))


def test_expand_to_a_fed_shape_checks_each_axis_broadcasts():
    relations = _relations('''
func.func @main(%arg0: tensor<?x6xf32>, %arg1: tensor<2xi64>) -> tensor<?x?xf32> {
  %0 = "onnx.expand"(%arg0, %arg1) {operand_roles = [0 : i64, 1 : i64], "onnx.node" = "node 'e'"} : (tensor<?x6xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}''')
    for v0, v1 in [(4, 6), (1, 6), (4, 1), (3, 1)]:
        assert all(c.holds({"d0_0": 4 if v0 != 3 else 1, "v1_0": v0, "v1_1": v1}) for c in relations)
    env = {"d0_0": 4, "v1_0": 2, "v1_1": 3}  # ORT: "invalid expand shape"
    failed = next(c for c in relations if not c.holds(env))
    assert failed.message(env) == ("node 'e': input shape [4, 6] does not broadcast to the target shape [2, 3]: "
                                   "at axis 0 (aligned right) 4 and 2 must be equal or 1")


def test_reshape_minus_1_beside_a_dim_that_is_0_at_run_time_is_refused():
    [check] = _relations('''
func.func @main(%arg0: tensor<?x4xf32>) -> tensor<?x?xf32> {
  %0 = "hipdnn.constant"() {name = "s", values = [0, -1]} : () -> tensor<2xi64>
  %1 = "onnx.reshape"(%arg0, %0) {operand_roles = [0 : i64, 1 : i64], "onnx.node" = "node 'r'"} : (tensor<?x4xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return %1 : tensor<?x?xf32>
}''')
    assert check.holds({"d0_0": 2})
    assert check.message({"d0_0": 0}) == ("node 'r': target shape [0, -1] has a -1 but its other dims multiply to 0, "
                                           "so the -1 cannot be inferred")


def test_concat_inputs_that_disagree_at_run_time_are_refused_even_when_unused():
    relations = _relations('''
func.func @main(%arg0: tensor<?x4xf32>, %arg1: tensor<?x?xf32>) -> tensor<?x4xf32> {
  %0 = "onnx.concat"(%arg0, %arg1) {operand_roles = [0 : i64, 1 : i64], "onnx.axis" = 0 : i64, "onnx.node" = "node 'c'"} : (tensor<?x4xf32>, tensor<?x?xf32>) -> tensor<?x4xf32>
  return %arg0 : tensor<?x4xf32>
}''')
    assert all(c.holds({"d0_0": 2, "d1_0": 3, "d1_1": 4}) for c in relations)
    env = {"d0_0": 2, "d1_0": 3, "d1_1": 5}
    failed = next(c for c in relations if not c.holds(env))
    assert failed.message(env) == "node 'c': input 1 has shape [3, 5], input 0 has [2, 4]; they must agree outside axis 0"


def test_layer_norm_over_no_elements_is_refused_like_onnx_runtime():
    relations = _relations('''
func.func @main(%arg0: tensor<?x3xf32>, %arg1: tensor<3xf32>) -> tensor<?x3xf32> {
  %0 = "onnx.layer_norm"(%arg0, %arg1) {operand_roles = [0 : i64, 1 : i64], "onnx.axis" = 0 : i64, "onnx.node" = "node 'n'"} : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<?x3xf32>
  return %0 : tensor<?x3xf32>
}''')
    assert all(c.holds({"d0_0": 2}) for c in relations)
    env = {"d0_0": 0}  # ORT: "Size of X.shape[axis:] must be at least 1, got 0"
    failed = next(c for c in relations if not c.holds(env))
    assert failed.message(env) == ("node 'n': input shape [0, 3] has 0 elements from axis 0 on; "
                                   "LayerNormalization needs at least 1")


def test_gemm_transposes_for_any_nonzero_trans_b():
    out = _run('''
func.func @main(%arg0: tensor<2x4xf32>, %arg1: tensor<3x4xf32>) -> tensor<2x3xf32> {
  %0 = "onnx.gemm"(%arg0, %arg1) {operand_roles = [0 : i64, 1 : i64], "onnx.transB" = -2 : i64} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}''')
    assert "trans_b = 1" in out and _dims(hir.ir.Module.parse(out, hir.new_context()), "hipdnn.gemm") == ["2", "3"]
