// RUN: hipdnn-ep-compile opt %s --pass-pipeline=materialize-host-scalars --split-input-file | filecheck %s

// Identical dynamic dims arrays share one scratch slot range; a host value used on the device is
// materialized; a dynamic slice start gets a slot of its own (slots 0-1 the dims, 2-3 the host
// value's elements, 4-5 the slice starts).
// CHECK-LABEL: func.func @main
// CHECK-SAME:  attributes {hipdnn.host_scratch_slots = 6 : i64}
// CHECK:       "hipdnn.unary"(%arg0) {hipdnn.dims_slot = [0], op = "RELU"}
// CHECK:       "hipdnn.unary"(%0) {hipdnn.dims_slot = [0], op = "EXP"}
// CHECK:       "hipdnn.tie_dims"(%1,
// CHECK:       [[D:%.+]] = tensor.dim %arg0, {{%.+}} : tensor<?x4xf32>
// CHECK-NEXT:  [[C4:%.+]] = arith.constant 4 : index
// CHECK-NEXT:  [[M:%.+]] = "hipdnn.materialize"([[D]], [[C4]]) {hipdnn.dims_slot = [-1], hipdnn.values_slot = 2 : i64} : (index, index) -> tensor<2xi64>
// CHECK-NEXT:  [[S:%.+]] = "hipdnn.slice"(%1) {hipdnn.dims_slot = [-1], hipdnn.starts_slot = 4 : i64, steps = [1, 1]} : (tensor<?x4xf32>) -> tensor<1x4xf32>
// CHECK:       return %1, [[M]], [[S]]
// CHECK-NOT:   hipdnn.host_tensor
func.func @main(%arg0: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<2xi64>, tensor<1x4xf32>) {
  %0 = "hipdnn.unary"(%arg0) {op = "RELU"} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %t1_2 = arith.constant 0 : index
  %t1_3 = tensor.dim %arg0, %t1_2 : tensor<?x4xf32>
  %t1_4 = arith.constant 4 : index
  "hipdnn.tie_dims"(%0, %t1_3, %t1_4) : (tensor<?x4xf32>, index, index) -> ()
  %1 = "hipdnn.unary"(%0) {op = "EXP"} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %t2_2 = arith.constant 0 : index
  %t2_3 = tensor.dim %arg0, %t2_2 : tensor<?x4xf32>
  %t2_4 = arith.constant 4 : index
  "hipdnn.tie_dims"(%1, %t2_3, %t2_4) : (tensor<?x4xf32>, index, index) -> ()
  %h3_c0 = arith.constant 0 : index
  %h3_0 = tensor.dim %arg0, %h3_c0 : tensor<?x4xf32>
  %h3_1 = arith.constant 4 : index
  %2 = "hipdnn.host_tensor"(%h3_0, %h3_1) : (index, index) -> tensor<2xi64>
  %3 = "hipdnn.slice"(%1) {steps = [1, 1]} : (tensor<?x4xf32>) -> tensor<1x4xf32>
  %cm1 = arith.constant -1 : index
  %s0 = arith.addi %h3_0, %cm1 : index
  "hipdnn.tie_param"(%3, %s0, %h3_c0) {name = "starts"} : (tensor<1x4xf32>, index, index) -> ()
  return %1, %2, %3 : tensor<?x4xf32>, tensor<2xi64>, tensor<1x4xf32>
}

// -----

// A static graph uses no host scratch at all.
// CHECK-LABEL: func.func @main
// CHECK-NOT:   host_scratch_slots
// CHECK:       "hipdnn.unary"(%arg0) {{.*}}hipdnn.dims_slot = [-1]
func.func @main(%arg0: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %0 = "hipdnn.unary"(%arg0) {op = "RELU"} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}
