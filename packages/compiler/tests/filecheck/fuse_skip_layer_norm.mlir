// RUN: hipdnn-ep-compile opt %s --pass-pipeline=fuse-skip-layer-norm --split-input-file | filecheck %s

// An encoder layer's residual Add feeding LayerNormalization over the last axis: one onnx.skip_layer_norm
// of the Add's operands, Scale and B, named after the LayerNormalization; the Add goes.
// CHECK-LABEL: func.func @main
// CHECK-NOT:   onnx.add
// CHECK:       %[[Y:.*]] = "onnx.skip_layer_norm"(%arg0, %arg1, %{{.*}}, %{{.*}}) {onnx.epsilon = 9.999999960041972E-13 : f64, onnx.node = "node 'ln'", operand_roles = [0, 1, 2, 3]} : (tensor<?x4x8xf32>, tensor<?x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x4x8xf32>
// CHECK-NOT:   onnx.layer_norm
// CHECK:       return %[[Y]]
func.func @main(%arg0: tensor<?x4x8xf32>, %arg1: tensor<?x4x8xf32>) -> tensor<?x4x8xf32> {
  %s = "onnx.add"(%arg0, %arg1) {onnx.node = "node 'res'", operand_roles = [0, 1]} : (tensor<?x4x8xf32>, tensor<?x4x8xf32>) -> tensor<?x4x8xf32>
  %g = "hipdnn.weight"() {float_values = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], name = "g"} : () -> tensor<8xf32>
  %b = "hipdnn.weight"() {float_values = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], name = "b"} : () -> tensor<8xf32>
  %y = "onnx.layer_norm"(%s, %g, %b) {onnx.axis = -1 : i64, onnx.epsilon = 9.999999960041972E-13 : f64, onnx.node = "node 'ln'", operand_roles = [0, 1, 2]} : (tensor<?x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x4x8xf32>
  return %y : tensor<?x4x8xf32>
}

// -----

// float16, rank 2, no B, axis given as rank - 1: fused with three operands.
// CHECK-LABEL: func.func @main
// CHECK:       "onnx.skip_layer_norm"(%arg0, %arg1, %{{.*}}) {{.*}}operand_roles = [0, 1, 2]
// CHECK-NOT:   onnx.layer_norm
func.func @main(%arg0: tensor<6x8xf16>, %arg1: tensor<6x8xf16>) -> tensor<6x8xf16> {
  %s = "onnx.add"(%arg0, %arg1) {onnx.node = "node 'res'", operand_roles = [0, 1]} : (tensor<6x8xf16>, tensor<6x8xf16>) -> tensor<6x8xf16>
  %g = "hipdnn.weight"() {float_values = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], name = "g"} : () -> tensor<8xf16>
  %y = "onnx.layer_norm"(%s, %g) {onnx.axis = 1 : i64, onnx.epsilon = 1.0E-5 : f64, onnx.node = "node 'ln'", operand_roles = [0, 1]} : (tensor<6x8xf16>, tensor<8xf16>) -> tensor<6x8xf16>
  return %y : tensor<6x8xf16>
}

// -----

// The sum is returned too: nothing fuses (the Add must stay for that output).
// CHECK-LABEL: func.func @main
// CHECK:       onnx.add
// CHECK:       onnx.layer_norm
// CHECK-NOT:   onnx.skip_layer_norm
func.func @main(%arg0: tensor<2x4x8xf32>, %arg1: tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %s = "onnx.add"(%arg0, %arg1) {onnx.node = "node 'res'", operand_roles = [0, 1]} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %g = "hipdnn.weight"() {float_values = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], name = "g"} : () -> tensor<8xf32>
  %y = "onnx.layer_norm"(%s, %g) {onnx.axis = -1 : i64, onnx.epsilon = 1.0E-5 : f64, onnx.node = "node 'ln'", operand_roles = [0, 1]} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  return %y, %s : tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// -----

// An operand that broadcasts ([8] onto [2, 4, 8]) or a normalization over two axes: nothing fuses.
// CHECK-LABEL: func.func @main
// CHECK:       onnx.add
// CHECK:       onnx.layer_norm
// CHECK:       onnx.add
// CHECK:       onnx.layer_norm
// CHECK-NOT:   onnx.skip_layer_norm
func.func @main(%arg0: tensor<2x4x8xf32>, %arg1: tensor<8xf32>, %arg2: tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %s = "onnx.add"(%arg0, %arg1) {onnx.node = "node 'bias'", operand_roles = [0, 1]} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %g = "hipdnn.weight"() {float_values = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], name = "g"} : () -> tensor<8xf32>
  %y = "onnx.layer_norm"(%s, %g) {onnx.axis = -1 : i64, onnx.epsilon = 1.0E-5 : f64, onnx.node = "node 'ln'", operand_roles = [0, 1]} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %t = "onnx.add"(%arg0, %arg2) {onnx.node = "node 'res'", operand_roles = [0, 1]} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %g2 = "hipdnn.weight"() {float_values = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], name = "g2"} : () -> tensor<4x8xf32>
  %z = "onnx.layer_norm"(%t, %g2) {onnx.axis = 1 : i64, onnx.epsilon = 1.0E-5 : f64, onnx.node = "node 'ln2'", operand_roles = [0, 1]} : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  return %y, %z : tensor<2x4x8xf32>, tensor<2x4x8xf32>
}
