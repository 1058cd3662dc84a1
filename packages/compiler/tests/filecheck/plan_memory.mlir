// RUN: hipdnn-ep-compile opt %s --pass-pipeline=plan-memory --split-input-file | filecheck %s

// Liveness: %2 reuses %0's place; the result is an output of its own.
// CHECK-LABEL: func.func @main
// CHECK-SAME:  hipdnn.pool_size = "512"
// CHECK:       hipdnn.offset = "0", hipdnn.storage = "pool", op = "RELU"
// CHECK:       hipdnn.offset = "256", hipdnn.storage = "pool", op = "EXP"
// CHECK:       hipdnn.offset = "0", hipdnn.storage = "pool", op = "TANH"
// CHECK:       hipdnn.output_index = 0 : i64, hipdnn.storage = "output", op = "NEG"
func.func @main(%arg0: tensor<64xf32>) -> tensor<64xf32> {
  %0 = "hipdnn.unary"(%arg0) {op = "RELU", "hipdnn.dims_slot" = [-1]} : (tensor<64xf32>) -> tensor<64xf32>
  %1 = "hipdnn.unary"(%0) {op = "EXP", "hipdnn.dims_slot" = [-1]} : (tensor<64xf32>) -> tensor<64xf32>
  %2 = "hipdnn.unary"(%1) {op = "TANH", "hipdnn.dims_slot" = [-1]} : (tensor<64xf32>) -> tensor<64xf32>
  %3 = "hipdnn.unary"(%2) {op = "NEG", "hipdnn.dims_slot" = [-1]} : (tensor<64xf32>) -> tensor<64xf32>
  return %3 : tensor<64xf32>
}

// -----

// Dynamic sizes give offsets that are expressions of the input dims.
// CHECK-LABEL: func.func @main
// CHECK:       hipdnn.offset = "(mul 256 (ceildiv (mul 4 d0_0) 256))", hipdnn.storage = "pool", op = "EXP"
func.func @main(%arg0: tensor<?xf32>) -> tensor<?xf32> {
  %0 = "hipdnn.unary"(%arg0) {op = "RELU", "hipdnn.dims_slot" = [0]} : (tensor<?xf32>) -> tensor<?xf32>
  %t1_2 = arith.constant 0 : index
  %t1_3 = tensor.dim %arg0, %t1_2 : tensor<?xf32>
  "hipdnn.tie_dims"(%0, %t1_3) : (tensor<?xf32>, index) -> ()
  %1 = "hipdnn.unary"(%0) {op = "EXP", "hipdnn.dims_slot" = [0]} : (tensor<?xf32>) -> tensor<?xf32>
  %t2_2 = arith.constant 0 : index
  %t2_3 = tensor.dim %arg0, %t2_2 : tensor<?xf32>
  "hipdnn.tie_dims"(%1, %t2_3) : (tensor<?xf32>, index) -> ()
  %2 = "hipdnn.binary"(%0, %1) {op = "ADD", "hipdnn.dims_slot" = [0]} : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  %t3_2 = arith.constant 0 : index
  %t3_3 = tensor.dim %arg0, %t3_2 : tensor<?xf32>
  "hipdnn.tie_dims"(%2, %t3_3) : (tensor<?xf32>, index) -> ()
  return %2 : tensor<?xf32>
}
