// RUN: hipdnn-ep-compile opt %s --pass-pipeline=fuse-gated-matmul-nbits --split-input-file | filecheck %s
// RUN: hipdnn-ep-compile opt %s --pass-pipeline=fuse-gated-matmul-nbits --split-input-file --abi 1.2 | filecheck %s --check-prefix=ABI12

// A Llama MLP of an int4 model after fuse-silu-mul: gate and up MatMulNBits of one A (zero points of up only,
// the results unranked as imported) are one onnx.matmul_nbits_silu_mul named after the silu_mul, its operand
// roles the kernel's input positions (the gate's zero points, 3, left out); both MatMulNBits go.
// Compiled for ABI 1.2 (no matmul_nbits_silu_mul kernel), nothing fuses.
// CHECK-LABEL: func.func @main
// CHECK-NOT:   onnx.matmul_nbits"
// CHECK:       %[[Y:.*]] = "onnx.matmul_nbits_silu_mul"(%arg0, %[[BG:.*]], %[[SG:.*]], %[[BU:.*]], %[[SU:.*]], %[[ZU:.*]]) {onnx.K = 80 : i64, onnx.N = 48 : i64, onnx.bits = 4 : i64, onnx.block_size = 32 : i64, onnx.node = "node 'mlp/Mul'", operand_roles = [0, 1, 2, 4, 5, 6]} : (tensor<?x?x80xf16>, tensor<48x3x16xui8>, tensor<48x3xf16>, tensor<48x3x16xui8>, tensor<48x3xf16>, tensor<96xui8>) -> tensor<?x?x48xf16>
// CHECK-NOT:   onnx.matmul_nbits"
// CHECK-NOT:   onnx.silu_mul
// CHECK:       return %[[Y]]
// ABI12-LABEL: func.func @main
// ABI12-COUNT-2: "onnx.matmul_nbits"
// ABI12:       "onnx.silu_mul"
// ABI12-NOT:   onnx.matmul_nbits_silu_mul
func.func @main(%arg0: tensor<?x?x80xf16>) -> tensor<?x?x48xf16> {
  %bg = "hipdnn.weight"() {name = "gate_b"} : () -> tensor<48x3x16xui8>
  %sg = "hipdnn.weight"() {name = "gate_s"} : () -> tensor<48x3xf16>
  %g = "onnx.matmul_nbits"(%arg0, %bg, %sg) {onnx.K = 80 : i64, onnx.N = 48 : i64, onnx.accuracy_level = 4 : i64, onnx.bits = 4 : i64, onnx.block_size = 32 : i64, onnx.node = "node 'gate_proj/MatMulNBits'", operand_roles = [0, 1, 2]} : (tensor<?x?x80xf16>, tensor<48x3x16xui8>, tensor<48x3xf16>) -> tensor<*xf16>
  %bu = "hipdnn.weight"() {name = "up_b"} : () -> tensor<48x3x16xui8>
  %su = "hipdnn.weight"() {name = "up_s"} : () -> tensor<48x3xf16>
  %zu = "hipdnn.weight"() {name = "up_z"} : () -> tensor<96xui8>
  %u = "onnx.matmul_nbits"(%arg0, %bu, %su, %zu) {onnx.K = 80 : i64, onnx.N = 48 : i64, onnx.accuracy_level = 4 : i64, onnx.bits = 4 : i64, onnx.block_size = 32 : i64, onnx.node = "node 'up_proj/MatMulNBits'", operand_roles = [0, 1, 2, 3]} : (tensor<?x?x80xf16>, tensor<48x3x16xui8>, tensor<48x3xf16>, tensor<96xui8>) -> tensor<*xf16>
  %y = "onnx.silu_mul"(%g, %u) {onnx.node = "node 'mlp/Mul'", operand_roles = [0, 1]} : (tensor<*xf16>, tensor<*xf16>) -> tensor<?x?x48xf16>
  return %y : tensor<?x?x48xf16>
}

// -----

// Zero points on both, bits left to its default (4): the gate's at 3, up's at 6.
// CHECK-LABEL: func.func @main
// CHECK:       "onnx.matmul_nbits_silu_mul"(%arg0, {{.*}}) {onnx.K = 64 : i64, onnx.N = 8 : i64, onnx.block_size = 32 : i64, onnx.node = "node 'y'", operand_roles = [0, 1, 2, 3, 4, 5, 6]}
func.func @main(%arg0: tensor<2x64xf32>) -> tensor<2x8xf32> {
  %bg = "hipdnn.weight"() {name = "bg"} : () -> tensor<8x2x16xui8>
  %sg = "hipdnn.weight"() {name = "sg"} : () -> tensor<8x2xf32>
  %zg = "hipdnn.weight"() {name = "zg"} : () -> tensor<8xui8>
  %g = "onnx.matmul_nbits"(%arg0, %bg, %sg, %zg) {onnx.K = 64 : i64, onnx.N = 8 : i64, onnx.block_size = 32 : i64, onnx.node = "node 'g'", operand_roles = [0, 1, 2, 3]} : (tensor<2x64xf32>, tensor<8x2x16xui8>, tensor<8x2xf32>, tensor<8xui8>) -> tensor<2x8xf32>
  %bu = "hipdnn.weight"() {name = "bu"} : () -> tensor<8x2x16xui8>
  %su = "hipdnn.weight"() {name = "su"} : () -> tensor<8x2xf32>
  %zu = "hipdnn.weight"() {name = "zu"} : () -> tensor<8xui8>
  %u = "onnx.matmul_nbits"(%arg0, %bu, %su, %zu) {onnx.K = 64 : i64, onnx.N = 8 : i64, onnx.block_size = 32 : i64, onnx.node = "node 'u'", operand_roles = [0, 1, 2, 3]} : (tensor<2x64xf32>, tensor<8x2x16xui8>, tensor<8x2xf32>, tensor<8xui8>) -> tensor<2x8xf32>
  %y = "onnx.silu_mul"(%g, %u) {onnx.node = "node 'y'", operand_roles = [0, 1]} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// Up with a bias (input 5, after g_idx left out): nothing fuses.
// CHECK-LABEL: func.func @main
// CHECK-NOT:   onnx.matmul_nbits_silu_mul
// CHECK:       "onnx.silu_mul"
func.func @main(%arg0: tensor<2x64xf32>) -> tensor<2x8xf32> {
  %b = "hipdnn.weight"() {name = "b"} : () -> tensor<8x2x16xui8>
  %s = "hipdnn.weight"() {name = "s"} : () -> tensor<8x2xf32>
  %bias = "hipdnn.weight"() {name = "bias"} : () -> tensor<8xf32>
  %g = "onnx.matmul_nbits"(%arg0, %b, %s) {onnx.K = 64 : i64, onnx.N = 8 : i64, onnx.block_size = 32 : i64, onnx.node = "node 'g'", operand_roles = [0, 1, 2]} : (tensor<2x64xf32>, tensor<8x2x16xui8>, tensor<8x2xf32>) -> tensor<2x8xf32>
  %u = "onnx.matmul_nbits"(%arg0, %b, %s, %bias) {onnx.K = 64 : i64, onnx.N = 8 : i64, onnx.block_size = 32 : i64, onnx.node = "node 'u'", operand_roles = [0, 1, 2, 5]} : (tensor<2x64xf32>, tensor<8x2x16xui8>, tensor<8x2xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %y = "onnx.silu_mul"(%g, %u) {onnx.node = "node 'y'", operand_roles = [0, 1]} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// The projections of two A's, or the gate also returned (a graph output): nothing fuses.
// CHECK-LABEL: func.func @main
// CHECK-NOT:   onnx.matmul_nbits_silu_mul
// CHECK:       "onnx.silu_mul"
// CHECK-NOT:   onnx.matmul_nbits_silu_mul
// CHECK:       "onnx.silu_mul"
func.func @main(%arg0: tensor<2x64xf32>, %arg1: tensor<2x64xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) {
  %b = "hipdnn.weight"() {name = "b"} : () -> tensor<8x2x16xui8>
  %s = "hipdnn.weight"() {name = "s"} : () -> tensor<8x2xf32>
  %g = "onnx.matmul_nbits"(%arg0, %b, %s) {onnx.K = 64 : i64, onnx.N = 8 : i64, onnx.block_size = 32 : i64, onnx.node = "node 'g'", operand_roles = [0, 1, 2]} : (tensor<2x64xf32>, tensor<8x2x16xui8>, tensor<8x2xf32>) -> tensor<2x8xf32>
  %u = "onnx.matmul_nbits"(%arg1, %b, %s) {onnx.K = 64 : i64, onnx.N = 8 : i64, onnx.block_size = 32 : i64, onnx.node = "node 'u'", operand_roles = [0, 1, 2]} : (tensor<2x64xf32>, tensor<8x2x16xui8>, tensor<8x2xf32>) -> tensor<2x8xf32>
  %y = "onnx.silu_mul"(%g, %u) {onnx.node = "node 'y'", operand_roles = [0, 1]} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %g2 = "onnx.matmul_nbits"(%arg0, %b, %s) {onnx.K = 64 : i64, onnx.N = 8 : i64, onnx.block_size = 32 : i64, onnx.node = "node 'g2'", operand_roles = [0, 1, 2]} : (tensor<2x64xf32>, tensor<8x2x16xui8>, tensor<8x2xf32>) -> tensor<2x8xf32>
  %u2 = "onnx.matmul_nbits"(%arg0, %b, %s) {onnx.K = 64 : i64, onnx.N = 8 : i64, onnx.block_size = 32 : i64, onnx.node = "node 'u2'", operand_roles = [0, 1, 2]} : (tensor<2x64xf32>, tensor<8x2x16xui8>, tensor<8x2xf32>) -> tensor<2x8xf32>
  %y2 = "onnx.silu_mul"(%g2, %u2) {onnx.node = "node 'y2'", operand_roles = [0, 1]} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y, %y2, %g2 : tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>
}
