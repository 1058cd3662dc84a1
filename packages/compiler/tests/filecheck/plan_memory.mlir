// RUN: hipdnn-ep-compile opt %s --pass-pipeline=plan-memory --split-input-file | filecheck %s

// Liveness: %2 reuses %0's place; the result is an output of its own.
// CHECK-LABEL: func.func @main
// CHECK-SAME:  hipdnn.pool_size = "512"
// CHECK:       hipdnn.offset = "0", hipdnn.storage = "pool", op = "RELU"
// CHECK:       hipdnn.offset = "256", hipdnn.storage = "pool", op = "EXP"
// CHECK:       hipdnn.offset = "0", hipdnn.storage = "pool", op = "TANH"
// CHECK:       hipdnn.output_index = 0 : i64, hipdnn.storage = "output", op = "NEG"
func.func @main(%arg0: tensor<64xf32>) -> tensor<64xf32> {
  %0 = "hipdnn.unary"(%arg0) {op = "RELU", "hipdnn.dims" = [["64"]], "hipdnn.dims_slot" = [-1]} : (tensor<64xf32>) -> tensor<64xf32>
  %1 = "hipdnn.unary"(%0) {op = "EXP", "hipdnn.dims" = [["64"]], "hipdnn.dims_slot" = [-1]} : (tensor<64xf32>) -> tensor<64xf32>
  %2 = "hipdnn.unary"(%1) {op = "TANH", "hipdnn.dims" = [["64"]], "hipdnn.dims_slot" = [-1]} : (tensor<64xf32>) -> tensor<64xf32>
  %3 = "hipdnn.unary"(%2) {op = "NEG", "hipdnn.dims" = [["64"]], "hipdnn.dims_slot" = [-1]} : (tensor<64xf32>) -> tensor<64xf32>
  return %3 : tensor<64xf32>
}

// -----

// Dynamic sizes give offsets that are expressions of the input dims.
// CHECK-LABEL: func.func @main
// CHECK:       hipdnn.offset = "(mul 256 (ceildiv (mul 4 d0_0) 256))", hipdnn.storage = "pool", op = "EXP"
func.func @main(%arg0: tensor<?xf32>) -> tensor<?xf32> {
  %0 = "hipdnn.unary"(%arg0) {op = "RELU", "hipdnn.dims" = [["d0_0"]], "hipdnn.dims_slot" = [0]} : (tensor<?xf32>) -> tensor<?xf32>
  %1 = "hipdnn.unary"(%0) {op = "EXP", "hipdnn.dims" = [["d0_0"]], "hipdnn.dims_slot" = [0]} : (tensor<?xf32>) -> tensor<?xf32>
  %2 = "hipdnn.binary"(%0, %1) {op = "ADD", "hipdnn.dims" = [["d0_0"]], "hipdnn.dims_slot" = [0]} : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return %2 : tensor<?xf32>
}
