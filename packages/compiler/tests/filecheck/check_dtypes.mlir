// RUN: not hipdnn-ep-compile opt %s --pass-pipeline=check-dtypes --split-input-file | filecheck %s

// Element types the kernels accept pass unchanged.
// CHECK-LABEL: func.func @main
// CHECK:       "hipdnn.binary"(%arg0, %arg1) {{.*}}op = "ADD"
func.func @main(%arg0: tensor<4xf16>, %arg1: tensor<4xf16>) -> tensor<4xf16> {
  %0 = "hipdnn.binary"(%arg0, %arg1) {op = "ADD", "onnx.node" = "node 'a'"} : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

// The manifest's type table refuses int8 for binary ADD.
// CHECK: // error: node 'a': binary ADD does not support element type int8
func.func @main(%arg0: tensor<4xi8>, %arg1: tensor<4xi8>) -> tensor<4xi8> {
  %0 = "hipdnn.binary"(%arg0, %arg1) {op = "ADD", "onnx.node" = "node 'a'"} : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  return %0 : tensor<4xi8>
}

// -----

// The kernel's same-type rule (registry): matmul operands share one element type.
// CHECK: // error: node 'm': operands of mixed element types (float32, float16) are not supported
func.func @main(%arg0: tensor<2x4xf32>, %arg1: tensor<4x2xf16>) -> tensor<2x2xf32> {
  %0 = "hipdnn.matmul"(%arg0, %arg1) {"onnx.node" = "node 'm'"} : (tensor<2x4xf32>, tensor<4x2xf16>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// A named input (registry label) with its own type rule from the manifest.
// CHECK: // error: node 'w': the condition must be bool
func.func @main(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "hipdnn.where"(%arg0, %arg0, %arg1) {"onnx.node" = "node 'w'"} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
