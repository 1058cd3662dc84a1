// RUN: hipdnn-ep-compile opt %s --pass-pipeline=fuse-gelu --split-input-file | filecheck %s

// torch.onnx.export's GELU (opset 17): x / sqrt(2) -> Erf -> + 1 -> x * -> * 0.5 is one onnx.gelu of x,
// named after the chain's last Mul; the Div, Erf, Add and Muls go (their constants stay for eliminate-dead-ops).
// CHECK-LABEL: func.func @main
// CHECK-NOT:   onnx.erf
// CHECK:       %[[Y:.*]] = "onnx.gelu"(%arg0) {onnx.node = "node 'mul_half'", operand_roles = [0]} : (tensor<?x8xf32>) -> tensor<?x8xf32>
// CHECK-NOT:   onnx.mul
// CHECK:       return %[[Y]]
func.func @main(%arg0: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %s2 = "hipdnn.weight"() {float_values = [1.4142135381698608], name = "s2"} : () -> tensor<f32>
  %d = "onnx.div"(%arg0, %s2) {onnx.node = "node 'div'", operand_roles = [0, 1]} : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  %e = "onnx.erf"(%d) {onnx.node = "node 'erf'", operand_roles = [0]} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %one = "hipdnn.weight"() {float_values = [1.0], name = "one"} : () -> tensor<f32>
  %a = "onnx.add"(%e, %one) {onnx.node = "node 'add'", operand_roles = [0, 1]} : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  %m = "onnx.mul"(%arg0, %a) {onnx.node = "node 'mul'", operand_roles = [0, 1]} : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %h = "hipdnn.weight"() {float_values = [0.5], name = "h"} : () -> tensor<f32>
  %y = "onnx.mul"(%m, %h) {onnx.node = "node 'mul_half'", operand_roles = [0, 1]} : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

// GPT-2's GELU (transformers' NewGELUActivation): 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))),
// x^3 a Pow of an int64 exponent: one onnx.gelu with approximate "tanh".
// CHECK-LABEL: func.func @main
// CHECK:       %[[Y:.*]] = "onnx.gelu"(%arg0) {onnx.approximate = "tanh", onnx.node = "node 'y'", operand_roles = [0]} : (tensor<2x8xf16>) -> tensor<2x8xf16>
// CHECK-NOT:   onnx.tanh
// CHECK-NOT:   onnx.pow
// CHECK:       return %[[Y]]
func.func @main(%arg0: tensor<2x8xf16>) -> tensor<2x8xf16> {
  %half = "hipdnn.weight"() {float_values = [0.5], name = "half"} : () -> tensor<1xf16>
  %h = "onnx.mul"(%arg0, %half) {onnx.node = "node 'h'", operand_roles = [0, 1]} : (tensor<2x8xf16>, tensor<1xf16>) -> tensor<2x8xf16>
  %three = "hipdnn.constant"() {name = "three", values = [3]} : () -> tensor<i64>
  %x3 = "onnx.pow"(%arg0, %three) {onnx.node = "node 'pow'", operand_roles = [0, 1]} : (tensor<2x8xf16>, tensor<i64>) -> tensor<2x8xf16>
  %k = "hipdnn.weight"() {float_values = [0.044708251953125], name = "k"} : () -> tensor<f16>
  %kx3 = "onnx.mul"(%x3, %k) {onnx.node = "node 'kx3'", operand_roles = [0, 1]} : (tensor<2x8xf16>, tensor<f16>) -> tensor<2x8xf16>
  %s = "onnx.add"(%arg0, %kx3) {onnx.node = "node 's'", operand_roles = [0, 1]} : (tensor<2x8xf16>, tensor<2x8xf16>) -> tensor<2x8xf16>
  %b = "hipdnn.weight"() {float_values = [0.7978515625], name = "b"} : () -> tensor<f16>
  %q = "onnx.mul"(%s, %b) {onnx.node = "node 'q'", operand_roles = [0, 1]} : (tensor<2x8xf16>, tensor<f16>) -> tensor<2x8xf16>
  %t = "onnx.tanh"(%q) {onnx.node = "node 't'", operand_roles = [0]} : (tensor<2x8xf16>) -> tensor<2x8xf16>
  %one = "hipdnn.weight"() {float_values = [1.0], name = "one"} : () -> tensor<f16>
  %a = "onnx.add"(%t, %one) {onnx.node = "node 'a'", operand_roles = [0, 1]} : (tensor<2x8xf16>, tensor<f16>) -> tensor<2x8xf16>
  %y = "onnx.mul"(%h, %a) {onnx.node = "node 'y'", operand_roles = [0, 1]} : (tensor<2x8xf16>, tensor<2x8xf16>) -> tensor<2x8xf16>
  return %y : tensor<2x8xf16>
}

// -----

// The erf chain with its Erf result returned too: nothing fuses (the Erf must stay for that output).
// CHECK-LABEL: func.func @main
// CHECK:       onnx.div
// CHECK:       onnx.erf
// CHECK:       onnx.add
// CHECK:       onnx.mul
// CHECK:       onnx.mul
// CHECK-NOT:   onnx.gelu
func.func @main(%arg0: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %s2 = "hipdnn.weight"() {float_values = [1.4142135381698608], name = "s2"} : () -> tensor<f32>
  %d = "onnx.div"(%arg0, %s2) {onnx.node = "node 'div'", operand_roles = [0, 1]} : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  %e = "onnx.erf"(%d) {onnx.node = "node 'erf'", operand_roles = [0]} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %one = "hipdnn.weight"() {float_values = [1.0], name = "one"} : () -> tensor<f32>
  %a = "onnx.add"(%e, %one) {onnx.node = "node 'add'", operand_roles = [0, 1]} : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  %m = "onnx.mul"(%arg0, %a) {onnx.node = "node 'mul'", operand_roles = [0, 1]} : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %h = "hipdnn.weight"() {float_values = [0.5], name = "h"} : () -> tensor<f32>
  %y = "onnx.mul"(%m, %h) {onnx.node = "node 'mul_half'", operand_roles = [0, 1]} : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  return %y, %e : tensor<?x8xf32>, tensor<?x8xf32>
}
