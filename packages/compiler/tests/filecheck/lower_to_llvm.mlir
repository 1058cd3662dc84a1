// RUN: hipdnn-ep-compile opt %s --pass-pipeline=lower-to-llvm | filecheck %s

// Only the runtime functions the program calls are declared (from the manifest), then the entry
// point calls them: pool, output allocation (from ABI 1.3 the output's shape is stored first and
// hipdnn_ep_output_alloc gives its memory, the host's when it provides some), one kernel per op,
// and frees outputs on failure.
// CHECK-DAG:   llvm.func @hipdnn_ep_get_pool_base(!llvm.ptr, i64, !llvm.ptr) -> i32
// CHECK-DAG:   llvm.func @hipdnn_ep_output_alloc(!llvm.ptr, !llvm.ptr, i32, i64) -> i32
// CHECK-DAG:   llvm.func @hipdnn_ep_kernel_binary(
// CHECK-DAG:   llvm.func @hipdnn_ep_kernel_unary(
// CHECK-DAG:   llvm.func @hipdnn_ep_free(
// CHECK-NOT:   llvm.func @hipdnn_ep_get_host_scratch_base
// CHECK:       llvm.func @hipdnn_ep_program_run(
// CHECK:       llvm.call @hipdnn_ep_get_pool_base(
// CHECK:       llvm.call @hipdnn_ep_output_alloc(
// CHECK:       llvm.call @hipdnn_ep_kernel_binary(
// CHECK:       llvm.call @hipdnn_ep_kernel_unary(
// CHECK:       llvm.call @hipdnn_ep_free(
func.func @main(%arg0: tensor<2x3xf32>) -> tensor<2x3xf32> attributes {"hipdnn.pool_size" = "256"} {
  %0 = "hipdnn.weight"() {name = "w", "hipdnn.dims" = [["3"]], "hipdnn.dims_slot" = [-1]} : () -> tensor<3xf32>
  %1 = "hipdnn.binary"(%arg0, %0) {op = "ADD", "hipdnn.dims" = [["2", "3"]], "hipdnn.dims_slot" = [-1], "hipdnn.storage" = "pool", "hipdnn.offset" = "0"} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %2 = "hipdnn.unary"(%1) {op = "TANH", "hipdnn.dims" = [["2", "3"]], "hipdnn.dims_slot" = [-1], "hipdnn.storage" = "output", "hipdnn.output_index" = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %2 : tensor<2x3xf32>
}
