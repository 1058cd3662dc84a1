// RUN: hipdnn-ep-compile opt %s --pass-pipeline=fuse-attention --split-input-file | filecheck %s

// BERT's eager attention as torch.onnx.export writes it: heads Reshape + Transpose of Q, K (to [B, H, D, S]) and
// V, MatMul, Div by sqrt(D), Add of the [B, 1, 1, S] mask, Softmax, MatMul, Transpose, Reshape.  One 3-D
// Attention over views of the heads Reshapes (kept), its result reshaped by the root's target; the Transposes,
// MatMuls, Div, Add and Softmax go.
// CHECK-LABEL: func.func @main
// CHECK:       %[[QR:.*]] = "onnx.reshape"(%arg0, %[[HS:[0-9]+]]) {{.*}}-> tensor<?x?x2x8xf32>
// CHECK:       %[[KR:.*]] = "onnx.reshape"(%arg1, %[[HS]]) {{.*}}-> tensor<?x?x2x8xf32>
// CHECK:       %[[VR:.*]] = "onnx.reshape"(%arg2, %[[HS]]) {{.*}}-> tensor<?x?x2x8xf32>
// CHECK:       %[[FLAT:.*]] = "hipdnn.constant"() {name = "node 'y' heads merged", values = [0, 0, -1]}
// CHECK:       %[[Q:.*]] = "onnx.reshape"(%[[QR]], %[[FLAT]]) {{.*}}-> tensor<?x?x16xf32>
// CHECK:       %[[K:.*]] = "onnx.reshape"(%[[KR]], %[[FLAT]]) {{.*}}-> tensor<?x?x16xf32>
// CHECK:       %[[V:.*]] = "onnx.reshape"(%[[VR]], %[[FLAT]]) {{.*}}-> tensor<?x?x16xf32>
// CHECK:       %[[A:.*]] = "onnx.onnx_attention"(%[[Q]], %[[K]], %[[V]], %arg3) {hipdnn.mask_broadcasts = 1 : i64, onnx.kv_num_heads = 2 : i64, onnx.node = "node 'y'", onnx.q_num_heads = 2 : i64, onnx.scale = 0.35355339{{[0-9]*}} : f64, operand_roles = [0, 1, 2, 3]} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x1x1x?xf32>) -> tensor<?x?x16xf32>
// CHECK:       %[[Y:.*]] = "onnx.reshape"(%[[A]], %{{.*}}) {onnx.node = "node 'y'", operand_roles = [0, 1]} : (tensor<?x?x16xf32>, tensor<3xi64>) -> tensor<?x?x16xf32>
// CHECK-NOT:   onnx.transpose
// CHECK-NOT:   onnx.softmax
// CHECK:       return %[[Y]]
func.func @main(%arg0: tensor<?x?x16xf32>, %arg1: tensor<?x?x16xf32>, %arg2: tensor<?x?x16xf32>, %arg3: tensor<?x1x1x?xf32>) -> tensor<?x?x16xf32> {
  %hs = "hipdnn.constant"() {name = "hs", values = [0, 0, 2, 8]} : () -> tensor<4xi64>
  %qr = "onnx.reshape"(%arg0, %hs) {onnx.node = "node 'qr'", operand_roles = [0, 1]} : (tensor<?x?x16xf32>, tensor<4xi64>) -> tensor<?x?x2x8xf32>
  %q = "onnx.transpose"(%qr) {onnx.node = "node 'q'", onnx.perm = [0, 2, 1, 3], operand_roles = [0]} : (tensor<?x?x2x8xf32>) -> tensor<?x2x?x8xf32>
  %kr = "onnx.reshape"(%arg1, %hs) {onnx.node = "node 'kr'", operand_roles = [0, 1]} : (tensor<?x?x16xf32>, tensor<4xi64>) -> tensor<?x?x2x8xf32>
  %k = "onnx.transpose"(%kr) {onnx.node = "node 'k'", onnx.perm = [0, 2, 3, 1], operand_roles = [0]} : (tensor<?x?x2x8xf32>) -> tensor<?x2x8x?xf32>
  %vr = "onnx.reshape"(%arg2, %hs) {onnx.node = "node 'vr'", operand_roles = [0, 1]} : (tensor<?x?x16xf32>, tensor<4xi64>) -> tensor<?x?x2x8xf32>
  %v = "onnx.transpose"(%vr) {onnx.node = "node 'v'", onnx.perm = [0, 2, 1, 3], operand_roles = [0]} : (tensor<?x?x2x8xf32>) -> tensor<?x2x?x8xf32>
  %s = "onnx.matmul"(%q, %k) {onnx.node = "node 's'", operand_roles = [0, 1]} : (tensor<?x2x?x8xf32>, tensor<?x2x8x?xf32>) -> tensor<?x2x?x?xf32>
  %c = "hipdnn.weight"() {float_values = [2.8284270763397217], name = "c"} : () -> tensor<f32>
  %d = "onnx.div"(%s, %c) {onnx.node = "node 'd'", operand_roles = [0, 1]} : (tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>
  %m = "onnx.add"(%d, %arg3) {onnx.node = "node 'm'", operand_roles = [0, 1]} : (tensor<?x2x?x?xf32>, tensor<?x1x1x?xf32>) -> tensor<?x2x?x?xf32>
  %p = "onnx.softmax"(%m) {onnx.axis = -1 : i64, onnx.node = "node 'p'", operand_roles = [0]} : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %o = "onnx.matmul"(%p, %v) {onnx.node = "node 'o'", operand_roles = [0, 1]} : (tensor<?x2x?x?xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  %t = "onnx.transpose"(%o) {onnx.node = "node 't'", onnx.perm = [0, 2, 1, 3], operand_roles = [0]} : (tensor<?x2x?x8xf32>) -> tensor<?x?x2x8xf32>
  %ms = "hipdnn.constant"() {name = "ms", values = [0, 0, 16]} : () -> tensor<3xi64>
  %y = "onnx.reshape"(%t, %ms) {onnx.node = "node 'y'", operand_roles = [0, 1]} : (tensor<?x?x2x8xf32>, tensor<3xi64>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// -----

// torch's scaled_dot_product_attention export in float16: Q and K^T (two Transposes) each times sqrt(scale), no
// scale on the scores, a [B, 1, S, S] mask, and Where(IsNaN(p), 0, p) after the Softmax: all of it one Attention
// of scale 0.5 * 0.5 = 0.25 (the IsNaN and Where go too).
// CHECK-LABEL: func.func @main
// CHECK:       "onnx.onnx_attention"({{.*}}) {hipdnn.mask_broadcasts = 1 : i64, onnx.kv_num_heads = 2 : i64, onnx.node = "node 'y'", onnx.q_num_heads = 2 : i64, onnx.scale = 2.500000e-01 : f64, operand_roles = [0, 1, 2, 3]} : (tensor<?x?x16xf16>, tensor<?x?x16xf16>, tensor<?x?x16xf16>, tensor<?x1x?x?xf16>) -> tensor<?x?x16xf16>
// CHECK-NOT:   onnx.is_nan
// CHECK-NOT:   onnx.where
// CHECK-NOT:   onnx.mul
// CHECK:       return
func.func @main(%arg0: tensor<?x?x16xf16>, %arg1: tensor<?x?x16xf16>, %arg2: tensor<?x?x16xf16>, %arg3: tensor<?x1x?x?xf16>) -> tensor<?x?x16xf16> {
  %hs = "hipdnn.constant"() {name = "hs", values = [0, 0, 2, 8]} : () -> tensor<4xi64>
  %qr = "onnx.reshape"(%arg0, %hs) {onnx.node = "node 'qr'", operand_roles = [0, 1]} : (tensor<?x?x16xf16>, tensor<4xi64>) -> tensor<?x?x2x8xf16>
  %q = "onnx.transpose"(%qr) {onnx.node = "node 'q'", onnx.perm = [0, 2, 1, 3], operand_roles = [0]} : (tensor<?x?x2x8xf16>) -> tensor<?x2x?x8xf16>
  %kr = "onnx.reshape"(%arg1, %hs) {onnx.node = "node 'kr'", operand_roles = [0, 1]} : (tensor<?x?x16xf16>, tensor<4xi64>) -> tensor<?x?x2x8xf16>
  %k0 = "onnx.transpose"(%kr) {onnx.node = "node 'k0'", onnx.perm = [0, 2, 1, 3], operand_roles = [0]} : (tensor<?x?x2x8xf16>) -> tensor<?x2x?x8xf16>
  %k = "onnx.transpose"(%k0) {onnx.node = "node 'k'", onnx.perm = [0, 1, 3, 2], operand_roles = [0]} : (tensor<?x2x?x8xf16>) -> tensor<?x2x8x?xf16>
  %vr = "onnx.reshape"(%arg2, %hs) {onnx.node = "node 'vr'", operand_roles = [0, 1]} : (tensor<?x?x16xf16>, tensor<4xi64>) -> tensor<?x?x2x8xf16>
  %v = "onnx.transpose"(%vr) {onnx.node = "node 'v'", onnx.perm = [0, 2, 1, 3], operand_roles = [0]} : (tensor<?x?x2x8xf16>) -> tensor<?x2x?x8xf16>
  %r = "hipdnn.weight"() {float_values = [0.5], name = "r"} : () -> tensor<f16>
  %qs = "onnx.mul"(%q, %r) {onnx.node = "node 'qs'", operand_roles = [0, 1]} : (tensor<?x2x?x8xf16>, tensor<f16>) -> tensor<?x2x?x8xf16>
  %ks = "onnx.mul"(%k, %r) {onnx.node = "node 'ks'", operand_roles = [0, 1]} : (tensor<?x2x8x?xf16>, tensor<f16>) -> tensor<?x2x8x?xf16>
  %s = "onnx.matmul"(%qs, %ks) {onnx.node = "node 's'", operand_roles = [0, 1]} : (tensor<?x2x?x8xf16>, tensor<?x2x8x?xf16>) -> tensor<?x2x?x?xf16>
  %m = "onnx.add"(%s, %arg3) {onnx.node = "node 'm'", operand_roles = [0, 1]} : (tensor<?x2x?x?xf16>, tensor<?x1x?x?xf16>) -> tensor<?x2x?x?xf16>
  %p = "onnx.softmax"(%m) {onnx.axis = -1 : i64, onnx.node = "node 'p'", operand_roles = [0]} : (tensor<?x2x?x?xf16>) -> tensor<?x2x?x?xf16>
  %n = "onnx.is_nan"(%p) {onnx.node = "node 'n'", operand_roles = [0]} : (tensor<?x2x?x?xf16>) -> tensor<?x2x?x?xi1>
  %z = "hipdnn.weight"() {float_values = [0.0], name = "z"} : () -> tensor<f16>
  %pc = "onnx.where"(%n, %z, %p) {onnx.node = "node 'pc'", operand_roles = [0, 1, 2]} : (tensor<?x2x?x?xi1>, tensor<f16>, tensor<?x2x?x?xf16>) -> tensor<?x2x?x?xf16>
  %o = "onnx.matmul"(%pc, %v) {onnx.node = "node 'o'", operand_roles = [0, 1]} : (tensor<?x2x?x?xf16>, tensor<?x2x?x8xf16>) -> tensor<?x2x?x8xf16>
  %t = "onnx.transpose"(%o) {onnx.node = "node 't'", onnx.perm = [0, 2, 1, 3], operand_roles = [0]} : (tensor<?x2x?x8xf16>) -> tensor<?x?x2x8xf16>
  %ms = "hipdnn.constant"() {name = "ms", values = [0, 0, 16]} : () -> tensor<3xi64>
  %y = "onnx.reshape"(%t, %ms) {onnx.node = "node 'y'", operand_roles = [0, 1]} : (tensor<?x?x2x8xf16>, tensor<3xi64>) -> tensor<?x?x16xf16>
  return %y : tensor<?x?x16xf16>
}

// -----

// The chain with its softmax returned too: nothing fuses (the probabilities must be written for that output).
// CHECK-LABEL: func.func @main
// CHECK:       onnx.transpose
// CHECK:       onnx.softmax
// CHECK:       onnx.transpose
// CHECK-NOT:   onnx.onnx_attention
func.func @main(%arg0: tensor<?x?x16xf32>, %arg1: tensor<?x?x16xf32>, %arg2: tensor<?x?x16xf32>) -> (tensor<?x?x16xf32>, tensor<?x2x?x?xf32>) {
  %hs = "hipdnn.constant"() {name = "hs", values = [0, 0, 2, 8]} : () -> tensor<4xi64>
  %qr = "onnx.reshape"(%arg0, %hs) {onnx.node = "node 'qr'", operand_roles = [0, 1]} : (tensor<?x?x16xf32>, tensor<4xi64>) -> tensor<?x?x2x8xf32>
  %q = "onnx.transpose"(%qr) {onnx.node = "node 'q'", onnx.perm = [0, 2, 1, 3], operand_roles = [0]} : (tensor<?x?x2x8xf32>) -> tensor<?x2x?x8xf32>
  %kr = "onnx.reshape"(%arg1, %hs) {onnx.node = "node 'kr'", operand_roles = [0, 1]} : (tensor<?x?x16xf32>, tensor<4xi64>) -> tensor<?x?x2x8xf32>
  %k = "onnx.transpose"(%kr) {onnx.node = "node 'k'", onnx.perm = [0, 2, 3, 1], operand_roles = [0]} : (tensor<?x?x2x8xf32>) -> tensor<?x2x8x?xf32>
  %vr = "onnx.reshape"(%arg2, %hs) {onnx.node = "node 'vr'", operand_roles = [0, 1]} : (tensor<?x?x16xf32>, tensor<4xi64>) -> tensor<?x?x2x8xf32>
  %v = "onnx.transpose"(%vr) {onnx.node = "node 'v'", onnx.perm = [0, 2, 1, 3], operand_roles = [0]} : (tensor<?x?x2x8xf32>) -> tensor<?x2x?x8xf32>
  %s = "onnx.matmul"(%q, %k) {onnx.node = "node 's'", operand_roles = [0, 1]} : (tensor<?x2x?x8xf32>, tensor<?x2x8x?xf32>) -> tensor<?x2x?x?xf32>
  %p = "onnx.softmax"(%s) {onnx.axis = -1 : i64, onnx.node = "node 'p'", operand_roles = [0]} : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %o = "onnx.matmul"(%p, %v) {onnx.node = "node 'o'", operand_roles = [0, 1]} : (tensor<?x2x?x?xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  %t = "onnx.transpose"(%o) {onnx.node = "node 't'", onnx.perm = [0, 2, 1, 3], operand_roles = [0]} : (tensor<?x2x?x8xf32>) -> tensor<?x?x2x8xf32>
  %ms = "hipdnn.constant"() {name = "ms", values = [0, 0, 16]} : () -> tensor<3xi64>
  %y = "onnx.reshape"(%t, %ms) {onnx.node = "node 'y'", operand_roles = [0, 1]} : (tensor<?x?x2x8xf32>, tensor<3xi64>) -> tensor<?x?x16xf32>
  return %y, %p : tensor<?x?x16xf32>, tensor<?x2x?x?xf32>
}
