// RUN: hipdnn-ep-compile opt %s --pass-pipeline=fuse-qdq --split-input-file | filecheck %s

// DQ(x) + DQ(w, per output channel) + DQ(bias) -> Conv -> Relu -> Q, the Q's zero point the lowest uint8:
// one qlinear_conv with the Conv's attributes and node, its inputs by QLinearConv's positions; the Relu
// (redundant under the Q's saturation) and the DQs go.
// CHECK-LABEL: func.func @main
// CHECK-NOT:   onnx.dequantize_linear
// CHECK:       %[[Y:.*]] = "onnx.qlinear_conv"(%arg0, %[[XS:.*]], %[[XZ:.*]], %[[W:.*]], %[[WS:.*]], %[[YS:.*]], %[[YZ:.*]], %[[B:.*]]) {onnx.node = "node 'conv'", onnx.pads = [1, 1, 1, 1], operand_roles = [0, 1, 2, 3, 4, 6, 7, 8]}
// CHECK-SAME:  -> tensor<1x4x6x6xui8>
// CHECK-NOT:   onnx.relu
// CHECK-NOT:   onnx.conv
// CHECK:       return %[[Y]]
func.func @main(%arg0: tensor<1x3x6x6xui8>) -> tensor<1x4x6x6xui8> {
  %xs = "hipdnn.weight"() {float_values = [0.02], name = "xs"} : () -> tensor<f32>
  %xz = "hipdnn.weight"() {int_values = [100], name = "xz"} : () -> tensor<ui8>
  %x = "onnx.dequantize_linear"(%arg0, %xs, %xz) {onnx.node = "node 'dqx'", operand_roles = [0, 1, 2]} : (tensor<1x3x6x6xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x3x6x6xf32>
  %w = "hipdnn.weight"() {name = "w"} : () -> tensor<4x3x3x3xi8>
  %ws = "hipdnn.weight"() {name = "ws"} : () -> tensor<4xf32>
  %wd = "onnx.dequantize_linear"(%w, %ws) {onnx.axis = 0 : i64, onnx.node = "node 'dqw'", operand_roles = [0, 1]} : (tensor<4x3x3x3xi8>, tensor<4xf32>) -> tensor<4x3x3x3xf32>
  %b = "hipdnn.constant"() {name = "b", values = [285, -93, -138, -304]} : () -> tensor<4xi32>
  %bs = "hipdnn.weight"() {name = "bs"} : () -> tensor<4xf32>
  %bd = "onnx.dequantize_linear"(%b, %bs) {onnx.axis = 0 : i64, onnx.node = "node 'dqb'", operand_roles = [0, 1]} : (tensor<4xi32>, tensor<4xf32>) -> tensor<4xf32>
  %c = "onnx.conv"(%x, %wd, %bd) {onnx.node = "node 'conv'", onnx.pads = [1, 1, 1, 1], operand_roles = [0, 1, 2]} : (tensor<1x3x6x6xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32>
  %r = "onnx.relu"(%c) {onnx.node = "node 'relu'", operand_roles = [0]} : (tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %ys = "hipdnn.weight"() {float_values = [0.05], name = "ys"} : () -> tensor<f32>
  %yz = "hipdnn.weight"() {int_values = [0], name = "yz"} : () -> tensor<ui8>
  %y = "onnx.quantize_linear"(%r, %ys, %yz) {onnx.node = "node 'q'", operand_roles = [0, 1, 2]} : (tensor<1x4x6x6xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x4x6x6xui8>
  return %y : tensor<1x4x6x6xui8>
}

// -----

// The same group with the Q's zero point at 10: the Relu clamps what the Q would keep, so nothing fuses.
// CHECK-LABEL: func.func @main
// CHECK:       onnx.dequantize_linear
// CHECK:       onnx.conv
// CHECK:       onnx.relu
// CHECK:       onnx.quantize_linear
// CHECK-NOT:   onnx.qlinear_conv
func.func @main(%arg0: tensor<1x3x6x6xui8>) -> tensor<1x4x6x6xui8> {
  %xs = "hipdnn.weight"() {float_values = [0.02], name = "xs"} : () -> tensor<f32>
  %xz = "hipdnn.weight"() {int_values = [100], name = "xz"} : () -> tensor<ui8>
  %x = "onnx.dequantize_linear"(%arg0, %xs, %xz) {onnx.node = "node 'dqx'", operand_roles = [0, 1, 2]} : (tensor<1x3x6x6xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x3x6x6xf32>
  %w = "hipdnn.weight"() {name = "w"} : () -> tensor<4x3x3x3xi8>
  %ws = "hipdnn.weight"() {name = "ws"} : () -> tensor<4xf32>
  %wd = "onnx.dequantize_linear"(%w, %ws) {onnx.axis = 0 : i64, onnx.node = "node 'dqw'", operand_roles = [0, 1]} : (tensor<4x3x3x3xi8>, tensor<4xf32>) -> tensor<4x3x3x3xf32>
  %c = "onnx.conv"(%x, %wd) {onnx.node = "node 'conv'", onnx.pads = [1, 1, 1, 1], operand_roles = [0, 1]} : (tensor<1x3x6x6xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  %r = "onnx.relu"(%c) {onnx.node = "node 'relu'", operand_roles = [0]} : (tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %ys = "hipdnn.weight"() {float_values = [0.05], name = "ys"} : () -> tensor<f32>
  %yz = "hipdnn.weight"() {int_values = [10], name = "yz"} : () -> tensor<ui8>
  %y = "onnx.quantize_linear"(%r, %ys, %yz) {onnx.node = "node 'q'", operand_roles = [0, 1, 2]} : (tensor<1x4x6x6xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x4x6x6xui8>
  return %y : tensor<1x4x6x6xui8>
}
