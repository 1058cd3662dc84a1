// RUN: hipdnn-ep-compile opt %s --pass-pipeline=fuse-linear-bias --split-input-file | filecheck %s

// A linear layer over [batch, seq, 8]: x to [-1, 8], one onnx.gemm of W and the bias (named after the MatMul),
// the product back to x's leading dims (Shape(x, end=-1)) and N; the MatMul and Add go.
// CHECK-LABEL: func.func @main
// CHECK-NOT:   onnx.matmul
// CHECK:       %[[W:.*]] = "hipdnn.weight"() {name = "w"}
// CHECK:       %[[B:.*]] = "hipdnn.weight"() {name = "b"}
// CHECK:       %[[ROWS:.*]] = "hipdnn.constant"() {{.*}}values = [-1, 8]} : () -> tensor<2xi64>
// CHECK:       %[[X2:.*]] = "onnx.reshape"(%arg0, %[[ROWS]]) {{.*}} : (tensor<?x?x8xf32>, tensor<2xi64>) -> tensor<?x8xf32>
// CHECK:       %[[G:.*]] = "onnx.gemm"(%[[X2]], %[[W]], %[[B]]) {onnx.node = "node 'mm'", operand_roles = [0, 1, 2]} : (tensor<?x8xf32>, tensor<8x6xf32>, tensor<6xf32>) -> tensor<?x6xf32>
// CHECK:       %[[LEAD:.*]] = "onnx.shape"(%arg0) {onnx.end = -1 : i64
// CHECK:       %[[N:.*]] = "hipdnn.constant"() {{.*}}values = [6]} : () -> tensor<1xi64>
// CHECK:       %[[DIMS:.*]] = "onnx.concat"(%[[LEAD]], %[[N]]) {onnx.axis = 0 : i64
// CHECK:       %[[Y:.*]] = "onnx.reshape"(%[[G]], %[[DIMS]]) {onnx.node = "node 'add'", operand_roles = [0, 1]} : (tensor<?x6xf32>, tensor<3xi64>) -> tensor<?x?x6xf32>
// CHECK-NOT:   onnx.add
// CHECK:       return %[[Y]]
func.func @main(%arg0: tensor<?x?x8xf32>) -> tensor<?x?x6xf32> {
  %w = "hipdnn.weight"() {name = "w"} : () -> tensor<8x6xf32>
  %m = "onnx.matmul"(%arg0, %w) {onnx.node = "node 'mm'", operand_roles = [0, 1]} : (tensor<?x?x8xf32>, tensor<8x6xf32>) -> tensor<?x?x6xf32>
  %b = "hipdnn.weight"() {name = "b"} : () -> tensor<6xf32>
  %y = "onnx.add"(%m, %b) {onnx.node = "node 'add'", operand_roles = [0, 1]} : (tensor<?x?x6xf32>, tensor<6xf32>) -> tensor<?x?x6xf32>
  return %y : tensor<?x?x6xf32>
}

// -----

// Static leading dims, the bias first and of dims [1, 1, N]: the result dims are a constant, the bias a
// Reshape to [N] (Gemm's C is of rank at most 2).
// CHECK-LABEL: func.func @main
// CHECK:       %[[BN:.*]] = "onnx.reshape"(%{{.*}}, %{{.*}}) {{.*}} : (tensor<1x1x6xf16>, tensor<1xi64>) -> tensor<6xf16>
// CHECK:       %[[X2:.*]] = "onnx.reshape"(%arg0, %{{.*}}) {{.*}} -> tensor<6x8xf16>
// CHECK:       %[[G:.*]] = "onnx.gemm"(%[[X2]], %{{.*}}, %[[BN]]) {{.*}} -> tensor<6x6xf16>
// CHECK:       %[[DIMS:.*]] = "hipdnn.constant"() {{.*}}values = [2, 3, 6]} : () -> tensor<3xi64>
// CHECK:       %[[Y:.*]] = "onnx.reshape"(%[[G]], %[[DIMS]]) {{.*}} -> tensor<2x3x6xf16>
// CHECK:       return %[[Y]]
func.func @main(%arg0: tensor<2x3x8xf16>) -> tensor<2x3x6xf16> {
  %w = "hipdnn.weight"() {name = "w"} : () -> tensor<8x6xf16>
  %m = "onnx.matmul"(%arg0, %w) {onnx.node = "node 'mm'", operand_roles = [0, 1]} : (tensor<2x3x8xf16>, tensor<8x6xf16>) -> tensor<2x3x6xf16>
  %b = "hipdnn.weight"() {name = "b"} : () -> tensor<1x1x6xf16>
  %y = "onnx.add"(%b, %m) {onnx.node = "node 'add'", operand_roles = [0, 1]} : (tensor<1x1x6xf16>, tensor<2x3x6xf16>) -> tensor<2x3x6xf16>
  return %y : tensor<2x3x6xf16>
}

// -----

// Rank 2: the Gemm alone, its result the Add's.
// CHECK-LABEL: func.func @main
// CHECK-NEXT:  %[[W:.*]] = "hipdnn.weight"
// CHECK-NEXT:  %[[B:.*]] = "hipdnn.weight"
// CHECK-NEXT:  %[[Y:.*]] = "onnx.gemm"(%arg0, %[[W]], %[[B]]) {{.*}} : (tensor<?x8xf32>, tensor<8x6xf32>, tensor<6xf32>) -> tensor<?x6xf32>
// CHECK-NEXT:  return %[[Y]]
func.func @main(%arg0: tensor<?x8xf32>) -> tensor<?x6xf32> {
  %w = "hipdnn.weight"() {name = "w"} : () -> tensor<8x6xf32>
  %m = "onnx.matmul"(%arg0, %w) {onnx.node = "node 'mm'", operand_roles = [0, 1]} : (tensor<?x8xf32>, tensor<8x6xf32>) -> tensor<?x6xf32>
  %b = "hipdnn.weight"() {name = "b"} : () -> tensor<6xf32>
  %y = "onnx.add"(%m, %b) {onnx.node = "node 'add'", operand_roles = [0, 1]} : (tensor<?x6xf32>, tensor<6xf32>) -> tensor<?x6xf32>
  return %y : tensor<?x6xf32>
}

// -----

// x's last dim 5 against W's 8, static (a model ONNX shape inference would refuse): left to MatMul's shape rule.
// CHECK-LABEL: func.func @main
// CHECK:       onnx.matmul
// CHECK:       onnx.add
// CHECK-NOT:   onnx.gemm
func.func @main(%arg0: tensor<?x5xf32>) -> tensor<?x6xf32> {
  %w = "hipdnn.weight"() {name = "w"} : () -> tensor<8x6xf32>
  %m = "onnx.matmul"(%arg0, %w) {onnx.node = "node 'mm'", operand_roles = [0, 1]} : (tensor<?x5xf32>, tensor<8x6xf32>) -> tensor<?x6xf32>
  %b = "hipdnn.weight"() {name = "b"} : () -> tensor<6xf32>
  %y = "onnx.add"(%m, %b) {onnx.node = "node 'add'", operand_roles = [0, 1]} : (tensor<?x6xf32>, tensor<6xf32>) -> tensor<?x6xf32>
  return %y : tensor<?x6xf32>
}

// -----

// A bias of the product's full dims [4, 6] (not a row bias), and a product also returned: neither fuses.
// CHECK-LABEL: func.func @main
// CHECK-COUNT-2: onnx.matmul
// CHECK-NOT:   onnx.gemm
func.func @main(%arg0: tensor<4x8xf32>) -> (tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>) {
  %w = "hipdnn.weight"() {name = "w"} : () -> tensor<8x6xf32>
  %m = "onnx.matmul"(%arg0, %w) {onnx.node = "node 'mm'", operand_roles = [0, 1]} : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
  %b = "hipdnn.weight"() {name = "b"} : () -> tensor<4x6xf32>
  %y = "onnx.add"(%m, %b) {onnx.node = "node 'add'", operand_roles = [0, 1]} : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %m2 = "onnx.matmul"(%arg0, %w) {onnx.node = "node 'mm2'", operand_roles = [0, 1]} : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
  %c = "hipdnn.weight"() {name = "c"} : () -> tensor<6xf32>
  %z = "onnx.add"(%m2, %c) {onnx.node = "node 'add2'", operand_roles = [0, 1]} : (tensor<4x6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  return %y, %z, %m2 : tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>
}

// -----

// x's last dim dynamic (after the Reshape that merges attention's heads): x goes to [-1, its last dim] (Shape
// from -1 on), which the gemm kernel checks against W's K at run time; the bias an Identity of an initializer
// (torch.onnx.export's spelling of an initializer equal to an earlier one) is the initializer.
// CHECK-LABEL: func.func @main
// CHECK:       %[[B:.*]] = "hipdnn.weight"() {name = "b"}
// CHECK:       %[[LAST:.*]] = "onnx.shape"(%arg0) {{{.*}}onnx.start = -1 : i64{{.*}}} : (tensor<?x?x?xf32>) -> tensor<1xi64>
// CHECK:       %[[MINUS1:.*]] = "hipdnn.constant"() {{.*}}values = [-1]} : () -> tensor<1xi64>
// CHECK:       %[[COLS:.*]] = "onnx.concat"(%[[MINUS1]], %[[LAST]]) {{.*}} -> tensor<2xi64>
// CHECK:       %[[X2:.*]] = "onnx.reshape"(%arg0, %[[COLS]]) {{.*}} -> tensor<?x?xf32>
// CHECK:       "onnx.gemm"(%[[X2]], %{{.*}}, %[[B]]) {{.*}} : (tensor<?x?xf32>, tensor<8x6xf32>, tensor<6xf32>) -> tensor<?x6xf32>
// CHECK-NOT:   onnx.matmul
func.func @main(%arg0: tensor<?x?x?xf32>) -> tensor<?x?x6xf32> {
  %w = "hipdnn.weight"() {name = "w"} : () -> tensor<8x6xf32>
  %m = "onnx.matmul"(%arg0, %w) {onnx.node = "node 'mm'", operand_roles = [0, 1]} : (tensor<?x?x?xf32>, tensor<8x6xf32>) -> tensor<?x?x6xf32>
  %b = "hipdnn.weight"() {name = "b"} : () -> tensor<6xf32>
  %i = "onnx.identity"(%b) {onnx.node = "node 'id'", operand_roles = [0]} : (tensor<6xf32>) -> tensor<6xf32>
  %y = "onnx.add"(%i, %m) {onnx.node = "node 'add'", operand_roles = [0, 1]} : (tensor<6xf32>, tensor<?x?x6xf32>) -> tensor<?x?x6xf32>
  return %y : tensor<?x?x6xf32>
}
