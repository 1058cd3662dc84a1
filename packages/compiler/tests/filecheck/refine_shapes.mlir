// RUN: not hipdnn-ep-compile opt %s --pass-pipeline=refine-shapes --split-input-file | filecheck %s

// Shape/Gather/Unsqueeze/Concat fold into host tensors; Reshape becomes an alias with an inferred -1;
// its type and the signature gain the dim known statically.
// CHECK-LABEL: func.func @main(%arg0: tensor<?x?x8xf32>) -> tensor<?x4x?xf32>
// CHECK:       "hipdnn.host_tensor"() {hipdnn.dims = {{\[\["3"\]\]}}, onnx.node = "node 's'", values = ["d0_0", "d0_1", "8"]}
// CHECK:       "hipdnn.host_tensor"() {{.*}}values = ["-1", "4", "d0_1"]
// CHECK:       "hipdnn.alias"(%arg0) {hipdnn.dims = {{\[\["\(mul 2 d0_0\)", "4", "d0_1"\]\]}}, onnx.node = "node 'r'"} : (tensor<?x?x8xf32>) -> tensor<?x4x?xf32>
// CHECK-NOT:   "onnx.
func.func @main(%arg0: tensor<?x?x8xf32>) -> tensor<?x?x?xf32> {
  %0 = "onnx.shape"(%arg0) {operand_roles = [0 : i64], "onnx.node" = "node 's'"} : (tensor<?x?x8xf32>) -> tensor<3xi64>
  %1 = "hipdnn.constant"() {name = "i", values = ["1"], "hipdnn.dims" = [[]]} : () -> tensor<i64>
  %2 = "onnx.gather"(%0, %1) {operand_roles = [0 : i64, 1 : i64], "onnx.axis" = 0 : i64, "onnx.node" = "node 'g'"} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %3 = "hipdnn.constant"() {name = "a", values = ["0"], "hipdnn.dims" = [["1"]]} : () -> tensor<1xi64>
  %4 = "onnx.unsqueeze"(%2, %3) {operand_roles = [0 : i64, 1 : i64], "onnx.node" = "node 'u'"} : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %5 = "hipdnn.constant"() {name = "m", values = ["-1", "4"], "hipdnn.dims" = [["2"]]} : () -> tensor<2xi64>
  %6 = "onnx.concat"(%5, %4) {operand_roles = [0 : i64, 1 : i64], "onnx.axis" = 0 : i64, "onnx.node" = "node 'c'"} : (tensor<2xi64>, tensor<1xi64>) -> tensor<3xi64>
  %7 = "onnx.reshape"(%arg0, %6) {operand_roles = [0 : i64, 1 : i64], "onnx.node" = "node 'r'"} : (tensor<?x?x8xf32>, tensor<3xi64>) -> tensor<?x?x?xf32>
  return %7 : tensor<?x?x?xf32>
}

// -----

// Elementwise ops broadcast; ONNX ops sharing a kernel become it with their enum key.
// CHECK-LABEL: func.func @main
// CHECK:       "hipdnn.binary"(%arg0, %arg1) {hipdnn.dims = {{\[\["d0_0", "3", "4"\]\]}}, onnx.node = "node 'add'", op = "ADD"}
// CHECK:       "hipdnn.unary"({{.*}}) {hipdnn.dims = {{\[\["d0_0", "3", "4"\]\]}}, onnx.node = "node 'relu'", op = "RELU"}
func.func @main(%arg0: tensor<?x1x4xf32>, %arg1: tensor<3x4xf32>) -> tensor<?x3x4xf32> {
  %0 = "onnx.add"(%arg0, %arg1) {operand_roles = [0 : i64, 1 : i64], "onnx.node" = "node 'add'"} : (tensor<?x1x4xf32>, tensor<3x4xf32>) -> tensor<?x3x4xf32>
  %1 = "onnx.relu"(%0) {operand_roles = [0 : i64], "onnx.node" = "node 'relu'"} : (tensor<?x3x4xf32>) -> tensor<?x3x4xf32>
  return %1 : tensor<?x3x4xf32>
}

// -----

// A result of unknown rank gets its rank and static dims from the shape rule.
// CHECK-LABEL: func.func @main(%arg0: tensor<2x?xf32>, %arg1: tensor<?x3xf32>) -> tensor<2x3xf32>
// CHECK:       "hipdnn.binary"(%arg0, %arg1) {{.*}} : (tensor<2x?xf32>, tensor<?x3xf32>) -> tensor<2x3xf32>
func.func @main(%arg0: tensor<2x?xf32>, %arg1: tensor<?x3xf32>) -> tensor<*xf32> {
  %0 = "onnx.mul"(%arg0, %arg1) {operand_roles = [0 : i64, 1 : i64]} : (tensor<2x?xf32>, tensor<?x3xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

// Slice starts become run-time expressions of the input dims; steps stay constants.
// CHECK-LABEL: func.func @main
// CHECK:       "hipdnn.slice"(%arg0) {{{.*}}starts = ["(min (max (add -3 d0_0) 0) d0_0)"], steps = [1]}
func.func @main(%arg0: tensor<?xf32>) -> tensor<?xf32> {
  %0 = "hipdnn.constant"() {name = "s", values = ["-3"], "hipdnn.dims" = [["1"]]} : () -> tensor<1xi64>
  %1 = "hipdnn.constant"() {name = "e", values = ["100"], "hipdnn.dims" = [["1"]]} : () -> tensor<1xi64>
  %2 = "onnx.slice"(%arg0, %0, %1) {operand_roles = [0 : i64, 1 : i64, 2 : i64]} : (tensor<?xf32>, tensor<1xi64>, tensor<1xi64>) -> tensor<?xf32>
  return %2 : tensor<?xf32>
}

// -----

// A static relation that does not hold is refused at compile time, naming the node.
// CHECK: // error: node 'r': input shape [6] has 6 elements but target shape [4, 2] has 8
func.func @main(%arg0: tensor<6xf32>) -> tensor<4x2xf32> {
  %0 = "hipdnn.constant"() {name = "s", values = ["4", "2"], "hipdnn.dims" = [["2"]]} : () -> tensor<2xi64>
  %1 = "onnx.reshape"(%arg0, %0) {operand_roles = [0 : i64, 1 : i64], "onnx.node" = "node 'r'"} : (tensor<6xf32>, tensor<2xi64>) -> tensor<4x2xf32>
  return %1 : tensor<4x2xf32>
}
