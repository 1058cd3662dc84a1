"""refine-shapes: what the relations it writes decide at run time, evaluated over many dims (what the IR
spells, and what the pass refuses at compile time, is checked in filecheck/refine_shapes.mlir)."""

from __future__ import annotations

from hipdnn_ep_compiler import checks
from hipdnn_ep_compiler import ir as hir
from hipdnn_ep_compiler import symbolic as sym
from hipdnn_ep_compiler.passes import refine_shapes, run_pass


def _run(text: str) -> str:
    module = hir.ir.Module.parse(text, hir.new_context())
    run_pass(module, refine_shapes.NAME)
    assert module.operation.verify()
    return str(module)


def test_reshape_target_read_from_a_small_input_resolves_0_and_minus_1_at_run_time():
    out = _run('''
func.func @main(%arg0: tensor<?x6xf32>, %arg1: tensor<2xi64>) -> tensor<?x?xf32> {
  %0 = "onnx.reshape"(%arg0, %arg1) {operand_roles = [0 : i64, 1 : i64], "onnx.node" = "node 'r'"} : (tensor<?x6xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}''')
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

