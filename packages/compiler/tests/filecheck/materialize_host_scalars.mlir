// RUN: hipdnn-ep-compile opt %s --pass-pipeline=materialize-host-scalars --split-input-file | filecheck %s

// Identical dynamic dims arrays share one scratch slot range; a host value used on the device is
// materialized; a dynamic slice start gets a slot of its own.
// CHECK-LABEL: func.func @main
// CHECK-SAME:  hipdnn.host_scratch_slots = 6 : i64
// CHECK:       "hipdnn.unary"(%arg0) {{.*}}hipdnn.dims_slot = [0]
// CHECK:       "hipdnn.unary"({{.*}}hipdnn.dims_slot = [0]
// CHECK:       "hipdnn.materialize"() {hipdnn.dims = {{\[\["2"\]\]}}, hipdnn.dims_slot = [-1], hipdnn.values_slot = 2
// CHECK:       "hipdnn.slice"({{.*}}hipdnn.starts_slot = 4
// CHECK-NOT:   hipdnn.host_tensor
func.func @main(%arg0: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<2xi64>, tensor<?x4xf32>) {
  %0 = "hipdnn.unary"(%arg0) {op = "RELU", "hipdnn.dims" = [["d0_0", "4"]]} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %1 = "hipdnn.unary"(%0) {op = "EXP", "hipdnn.dims" = [["d0_0", "4"]]} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %2 = "hipdnn.host_tensor"() {values = ["d0_0", "4"], "hipdnn.dims" = [["2"]]} : () -> tensor<2xi64>
  %3 = "hipdnn.slice"(%1) {starts = ["(add -1 d0_0)", "0"], steps = [1, 1], "hipdnn.dims" = [["1", "4"]]} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %1, %2, %3 : tensor<?x4xf32>, tensor<2xi64>, tensor<?x4xf32>
}

// -----

// A static graph uses no host scratch at all.
// CHECK-LABEL: func.func @main
// CHECK-NOT:   host_scratch_slots
// CHECK:       "hipdnn.unary"(%arg0) {{.*}}hipdnn.dims_slot = [-1]
func.func @main(%arg0: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %0 = "hipdnn.unary"(%arg0) {op = "RELU", "hipdnn.dims" = [["3", "4"]]} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}
