"""plan-memory: IR in, IR out."""

from hipdnn_ep_compiler import ir as hir
from hipdnn_ep_compiler.passes import plan_memory


def _run(text):
    module = hir.ir.Module.parse(text, hir.new_context())
    plan_memory.run(module)
    assert module.operation.verify()
    return str(module)


def test_liveness_reuses_dead_buffers_and_outputs_are_malloced():
    out = _run('''
func.func @main(%arg0: tensor<64xf32>) -> tensor<64xf32> {
  %0 = "hipdnn.unary"(%arg0) {op = "RELU", "hipdnn.dims" = [["64"]], "hipdnn.dims_slot" = [-1]} : (tensor<64xf32>) -> tensor<64xf32>
  %1 = "hipdnn.unary"(%0) {op = "EXP", "hipdnn.dims" = [["64"]], "hipdnn.dims_slot" = [-1]} : (tensor<64xf32>) -> tensor<64xf32>
  %2 = "hipdnn.unary"(%1) {op = "TANH", "hipdnn.dims" = [["64"]], "hipdnn.dims_slot" = [-1]} : (tensor<64xf32>) -> tensor<64xf32>
  %3 = "hipdnn.unary"(%2) {op = "NEG", "hipdnn.dims" = [["64"]], "hipdnn.dims_slot" = [-1]} : (tensor<64xf32>) -> tensor<64xf32>
  return %3 : tensor<64xf32>
}''')
    # %0 and %1 overlap; %2 overlaps only %1, so it reuses %0's place at offset 0
    assert out.count('hipdnn.offset = "0"') == 2
    assert out.count('hipdnn.offset = "256"') == 1
    assert 'hipdnn.output_index = 0 : i64, hipdnn.storage = "output"' in out
    assert 'hipdnn.pool_size = "512"' in out


def test_returned_input_and_duplicate_outputs_get_copies():
    out = _run('''
func.func @main(%arg0: tensor<?xf32>) -> (tensor<?xf32>, tensor<?xf32>, tensor<?xf32>) {
  %0 = "hipdnn.unary"(%arg0) {op = "RELU", "hipdnn.dims" = [["d0_0"]], "hipdnn.dims_slot" = [0]} : (tensor<?xf32>) -> tensor<?xf32>
  return %arg0, %0, %0 : tensor<?xf32>, tensor<?xf32>, tensor<?xf32>
}''')
    assert out.count('"hipdnn.copy"') == 2
    assert "hipdnn.dims_slot = [-2]" in out  # the copy of the input keeps the caller's dims
    assert "hipdnn.pool_size" not in out  # everything lives in outputs


def test_dynamic_sizes_give_offset_expressions():
    out = _run('''
func.func @main(%arg0: tensor<?xf32>) -> tensor<?xf32> {
  %0 = "hipdnn.unary"(%arg0) {op = "RELU", "hipdnn.dims" = [["d0_0"]], "hipdnn.dims_slot" = [0]} : (tensor<?xf32>) -> tensor<?xf32>
  %1 = "hipdnn.unary"(%0) {op = "EXP", "hipdnn.dims" = [["d0_0"]], "hipdnn.dims_slot" = [0]} : (tensor<?xf32>) -> tensor<?xf32>
  %2 = "hipdnn.binary"(%0, %1) {op = "ADD", "hipdnn.dims" = [["d0_0"]], "hipdnn.dims_slot" = [0]} : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return %2 : tensor<?xf32>
}''')
    assert 'hipdnn.offset = "(mul 256 (ceildiv (mul 4 d0_0) 256))"' in out
