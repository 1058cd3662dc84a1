// RUN: hipdnn-ep-compile opt %s --pass-pipeline=fuse-silu-mul --split-input-file | filecheck %s

// onnxruntime-genai's builder: Sigmoid(gate), gate * that, then * up is one onnx.silu_mul of gate and up,
// named after the outer Mul; the Sigmoid and the inner Mul go.
// CHECK-LABEL: func.func @main
// CHECK-NOT:   onnx.sigmoid
// CHECK:       %[[Y:.*]] = "onnx.silu_mul"(%arg0, %arg1) {onnx.node = "node 'mlp/Mul'", operand_roles = [0, 1]} : (tensor<?x?x16xf16>, tensor<?x?x16xf16>) -> tensor<?x?x16xf16>
// CHECK-NOT:   onnx.mul
// CHECK:       return %[[Y]]
func.func @main(%arg0: tensor<?x?x16xf16>, %arg1: tensor<?x?x16xf16>) -> tensor<?x?x16xf16> {
  %s = "onnx.sigmoid"(%arg0) {onnx.node = "node 'act_fn/Sigmoid'", operand_roles = [0]} : (tensor<?x?x16xf16>) -> tensor<?x?x16xf16>
  %m = "onnx.mul"(%arg0, %s) {onnx.node = "node 'act_fn/Mul'", operand_roles = [0, 1]} : (tensor<?x?x16xf16>, tensor<?x?x16xf16>) -> tensor<?x?x16xf16>
  %y = "onnx.mul"(%m, %arg1) {onnx.node = "node 'mlp/Mul'", operand_roles = [0, 1]} : (tensor<?x?x16xf16>, tensor<?x?x16xf16>) -> tensor<?x?x16xf16>
  return %y : tensor<?x?x16xf16>
}

// -----

// The operands of both Muls the other way round, up broadcast over the gate: still one onnx.silu_mul of gate, up.
// CHECK-LABEL: func.func @main
// CHECK:       %[[Y:.*]] = "onnx.silu_mul"(%arg0, %arg1) {onnx.node = "node 'y'", operand_roles = [0, 1]} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// CHECK:       return %[[Y]]
func.func @main(%arg0: tensor<2x8xf32>, %arg1: tensor<8xf32>) -> tensor<2x8xf32> {
  %s = "onnx.sigmoid"(%arg0) {onnx.node = "node 's'", operand_roles = [0]} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %m = "onnx.mul"(%s, %arg0) {onnx.node = "node 'm'", operand_roles = [0, 1]} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %y = "onnx.mul"(%arg1, %m) {onnx.node = "node 'y'", operand_roles = [0, 1]} : (tensor<8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// The SiLU also returned (a graph output): nothing fuses.
// CHECK-LABEL: func.func @main
// CHECK:       onnx.sigmoid
// CHECK-NOT:   onnx.silu_mul
func.func @main(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %s = "onnx.sigmoid"(%arg0) {onnx.node = "node 's'", operand_roles = [0]} : (tensor<4xf32>) -> tensor<4xf32>
  %m = "onnx.mul"(%arg0, %s) {onnx.node = "node 'm'", operand_roles = [0, 1]} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %y = "onnx.mul"(%m, %arg1) {onnx.node = "node 'y'", operand_roles = [0, 1]} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y, %m : tensor<4xf32>, tensor<4xf32>
}
