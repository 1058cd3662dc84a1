// RUN: not hipdnn-ep-compile opt %s --pass-pipeline=check-dtypes --split-input-file | filecheck %s

// Element types the kernels accept pass unchanged.
// CHECK-LABEL: func.func @main(%arg0: tensor<4xf16>, %arg1: tensor<4xf16>, %arg2: tensor<4xi64>) -> (tensor<4xf16>, tensor<4xi64>, tensor<4xf16>)
// CHECK-NEXT:  %0 = "hipdnn.binary"(%arg0, %arg1) {onnx.node = "node 'a'", op = "ADD"} : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
// CHECK-NEXT:  %1 = "hipdnn.binary"(%arg2, %arg2) {op = "ADD"} : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
// CHECK-NEXT:  %2 = "hipdnn.unary"(%arg1) {op = "TANH"} : (tensor<4xf16>) -> tensor<4xf16>
// CHECK-NEXT:  return %0, %1, %2 : tensor<4xf16>, tensor<4xi64>, tensor<4xf16>
func.func @main(%arg0: tensor<4xf16>, %arg1: tensor<4xf16>, %arg2: tensor<4xi64>) -> (tensor<4xf16>, tensor<4xi64>, tensor<4xf16>) {
  %0 = "hipdnn.binary"(%arg0, %arg1) {op = "ADD", "onnx.node" = "node 'a'"} : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
  %1 = "hipdnn.binary"(%arg2, %arg2) {op = "ADD"} : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %2 = "hipdnn.unary"(%arg1) {op = "TANH"} : (tensor<4xf16>) -> tensor<4xf16>
  return %0, %1, %2 : tensor<4xf16>, tensor<4xi64>, tensor<4xf16>
}

// -----

// The manifest's type table refuses float64 for unary TANH (binary ADD accepts it since ABI 1.3).
// CHECK: // error: node 'a': unary TANH does not support element type float64
func.func @main(%arg0: tensor<4xf64>) -> tensor<4xf64> {
  %0 = "hipdnn.unary"(%arg0) {op = "TANH", "onnx.node" = "node 'a'"} : (tensor<4xf64>) -> tensor<4xf64>
  return %0 : tensor<4xf64>
}

// -----

// The table is per op: int8 ADD is accepted, int8 POW is not.
// CHECK: // error: node 'n': binary POW does not support element type int8
func.func @main(%arg0: tensor<4xi8>, %arg1: tensor<4xi8>) -> tensor<4xi8> {
  %0 = "hipdnn.binary"(%arg0, %arg1) {op = "POW", "onnx.node" = "node 'n'"} : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  return %0 : tensor<4xi8>
}

// -----

// Softmax's table holds no integer type; a node without a name is named by its op.
// CHECK: // error: hipdnn.softmax: softmax does not support element type int32
func.func @main(%arg0: tensor<4xi32>) -> tensor<4xi32> {
  %0 = "hipdnn.softmax"(%arg0) {axis = 0 : i64} : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// The kernel's same-type rule (registry): matmul operands share one element type.
// CHECK: // error: node 'm': operands of mixed element types (float32, float16) are not supported
func.func @main(%arg0: tensor<2x4xf32>, %arg1: tensor<4x2xf16>) -> tensor<2x2xf32> {
  %0 = "hipdnn.matmul"(%arg0, %arg1) {"onnx.node" = "node 'm'"} : (tensor<2x4xf32>, tensor<4x2xf16>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// The same rule for binary ops.
// CHECK: // error: node 'n': operands of mixed element types (float32, int64) are not supported
func.func @main(%arg0: tensor<4xf32>, %arg1: tensor<4xi64>) -> tensor<4xf32> {
  %0 = "hipdnn.binary"(%arg0, %arg1) {op = "ADD", "onnx.node" = "node 'n'"} : (tensor<4xf32>, tensor<4xi64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A bool condition and values of one type pass unchanged.
// CHECK-LABEL: func.func @main
// CHECK-NEXT:  %0 = "hipdnn.where"(%arg0, %arg1, %arg2) {onnx.node = "node 'w'"} : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
func.func @main(%arg0: tensor<4xi1>, %arg1: tensor<4xf32>, %arg2: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "hipdnn.where"(%arg0, %arg1, %arg2) {"onnx.node" = "node 'w'"} : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A named input (registry label) with its own type rule from the manifest.
// CHECK: // error: node 'w': the condition must be bool
func.func @main(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>, %arg2: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "hipdnn.where"(%arg0, %arg1, %arg2) {"onnx.node" = "node 'w'"} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Values of mixed types are reported before a condition that is not bool.
// CHECK: // error: node 'w': operands of mixed element types (float32, int64) are not supported
func.func @main(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>, %arg2: tensor<4xi64>) -> tensor<4xf32> {
  %0 = "hipdnn.where"(%arg0, %arg1, %arg2) {"onnx.node" = "node 'w'"} : (tensor<4xf32>, tensor<4xf32>, tensor<4xi64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Gather indices of int32 or int64 pass unchanged.
// CHECK-LABEL: func.func @main
// CHECK-NEXT:  %0 = "hipdnn.gather"(%arg0, %arg1) {axis = 0 : i64, onnx.node = "node 'g'"} : (tensor<4xf32>, tensor<2xi32>) -> tensor<2xf32>
// CHECK-NEXT:  %1 = "hipdnn.gather"(%arg0, %arg2) {axis = 0 : i64, onnx.node = "node 'h'"} : (tensor<4xf32>, tensor<2xi64>) -> tensor<2xf32>
func.func @main(%arg0: tensor<4xf32>, %arg1: tensor<2xi32>, %arg2: tensor<2xi64>) -> (tensor<2xf32>, tensor<2xf32>) {
  %0 = "hipdnn.gather"(%arg0, %arg1) {axis = 0 : i64, "onnx.node" = "node 'g'"} : (tensor<4xf32>, tensor<2xi32>) -> tensor<2xf32>
  %1 = "hipdnn.gather"(%arg0, %arg2) {axis = 0 : i64, "onnx.node" = "node 'h'"} : (tensor<4xf32>, tensor<2xi64>) -> tensor<2xf32>
  return %0, %1 : tensor<2xf32>, tensor<2xf32>
}

// -----

// Other index types are refused, the rule naming the types it allows.
// CHECK: // error: node 'g': indices must be int32 or int64
func.func @main(%arg0: tensor<4xf32>, %arg1: tensor<2xf32>) -> tensor<2xf32> {
  %0 = "hipdnn.gather"(%arg0, %arg1) {axis = 0 : i64, "onnx.node" = "node 'g'"} : (tensor<4xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
