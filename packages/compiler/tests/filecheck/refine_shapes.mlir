// RUN: not hipdnn-ep-compile opt %s --pass-pipeline=refine-shapes --split-input-file | filecheck %s

// Shape/Gather/Unsqueeze/Concat fold into host tensors whose elements are index values over the
// input dims (tensor.dim, read once: cse); Reshape becomes an alias whose inferred -1 is arith, tied
// to it by hipdnn.tie_dims; its type and the signature gain the dim known statically.  The relation
// the -1 needs is a hipdnn.check over the same values.
// CHECK-LABEL: func.func @main(%arg0: tensor<?x?x8xf32>) -> tensor<?x4x?xf32>
// CHECK-DAG:   [[C0:%.+]] = arith.constant 0 : index
// CHECK-DAG:   [[C1:%.+]] = arith.constant 1 : index
// CHECK-DAG:   [[C2:%.+]] = arith.constant 2 : index
// CHECK-DAG:   [[C4:%.+]] = arith.constant 4 : index
// CHECK-DAG:   [[C8:%.+]] = arith.constant 8 : index
// CHECK-DAG:   [[CM1:%.+]] = arith.constant -1 : index
// CHECK:       [[D0:%.+]] = tensor.dim %arg0, [[C0]] : tensor<?x?x8xf32>
// CHECK-NEXT:  [[D1:%.+]] = tensor.dim %arg0, [[C1]] : tensor<?x?x8xf32>
// CHECK-NOT:   tensor.dim
// CHECK:       "hipdnn.host_tensor"([[D0]], [[D1]], [[C8]]) {onnx.node = "node 's'"} : (index, index, index) -> tensor<3xi64>
// CHECK:       "hipdnn.host_tensor"([[CM1]], [[C4]], [[D1]]) {onnx.node = "node 'c'"}
// CHECK:       [[K:%.+]] = arith.muli [[D1]], [[C4]] : index
// CHECK:       "hipdnn.check"([[C1]], [[K]], [[D1]]) {kind = "le", {{.*}}where = "node 'r'"}
// CHECK:       [[A:%.+]] = "hipdnn.alias"(%arg0) {onnx.node = "node 'r'"} : (tensor<?x?x8xf32>) -> tensor<?x4x?xf32>
// CHECK:       [[N:%.+]] = arith.muli [[D0]], [[C2]] : index
// CHECK:       "hipdnn.tie_dims"([[A]], [[N]], [[C4]], [[D1]]) : (tensor<?x4x?xf32>, index, index, index) -> ()
// CHECK-NOT:   "onnx.
func.func @main(%arg0: tensor<?x?x8xf32>) -> tensor<?x?x?xf32> {
  %0 = "onnx.shape"(%arg0) {operand_roles = [0 : i64], "onnx.node" = "node 's'"} : (tensor<?x?x8xf32>) -> tensor<3xi64>
  %1 = "hipdnn.constant"() {name = "i", values = [1]} : () -> tensor<i64>
  %2 = "onnx.gather"(%0, %1) {operand_roles = [0 : i64, 1 : i64], "onnx.axis" = 0 : i64, "onnx.node" = "node 'g'"} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %3 = "hipdnn.constant"() {name = "a", values = [0]} : () -> tensor<1xi64>
  %4 = "onnx.unsqueeze"(%2, %3) {operand_roles = [0 : i64, 1 : i64], "onnx.node" = "node 'u'"} : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %5 = "hipdnn.constant"() {name = "m", values = [-1, 4]} : () -> tensor<2xi64>
  %6 = "onnx.concat"(%5, %4) {operand_roles = [0 : i64, 1 : i64], "onnx.axis" = 0 : i64, "onnx.node" = "node 'c'"} : (tensor<2xi64>, tensor<1xi64>) -> tensor<3xi64>
  %7 = "onnx.reshape"(%arg0, %6) {operand_roles = [0 : i64, 1 : i64], "onnx.node" = "node 'r'"} : (tensor<?x?x8xf32>, tensor<3xi64>) -> tensor<?x?x?xf32>
  return %7 : tensor<?x?x?xf32>
}

// -----

// Elementwise ops broadcast; ONNX ops sharing a kernel become it with their enum key.  Both results
// have the same dims: one set of index values (canonicalize + cse) tied to each.
// CHECK-LABEL: func.func @main
// CHECK-DAG:   [[C0:%.+]] = arith.constant 0 : index
// CHECK-DAG:   [[C3:%.+]] = arith.constant 3 : index
// CHECK-DAG:   [[C4:%.+]] = arith.constant 4 : index
// CHECK:       [[ADD:%.+]] = "hipdnn.binary"(%arg0, %arg1) {onnx.node = "node 'add'", op = "ADD"} : (tensor<?x1x4xf32>, tensor<3x4xf32>) -> tensor<?x3x4xf32>
// CHECK:       [[D0:%.+]] = tensor.dim %arg0, [[C0]]
// CHECK:       "hipdnn.tie_dims"([[ADD]], [[D0]], [[C3]], [[C4]]) : (tensor<?x3x4xf32>, index, index, index)
// CHECK:       [[RELU:%.+]] = "hipdnn.unary"([[ADD]]) {onnx.node = "node 'relu'", op = "RELU"}
// CHECK:       "hipdnn.tie_dims"([[RELU]], [[D0]], [[C3]], [[C4]])
func.func @main(%arg0: tensor<?x1x4xf32>, %arg1: tensor<3x4xf32>) -> tensor<?x3x4xf32> {
  %0 = "onnx.add"(%arg0, %arg1) {operand_roles = [0 : i64, 1 : i64], "onnx.node" = "node 'add'"} : (tensor<?x1x4xf32>, tensor<3x4xf32>) -> tensor<?x3x4xf32>
  %1 = "onnx.relu"(%0) {operand_roles = [0 : i64], "onnx.node" = "node 'relu'"} : (tensor<?x3x4xf32>) -> tensor<?x3x4xf32>
  return %1 : tensor<?x3x4xf32>
}

// -----

// A result of unknown rank gets its rank and static dims from the shape rule; a fully static type
// needs no tie.
// CHECK-LABEL: func.func @main(%arg0: tensor<2x?xf32>, %arg1: tensor<?x3xf32>) -> tensor<2x3xf32>
// CHECK:       "hipdnn.binary"(%arg0, %arg1) {{.*}} : (tensor<2x?xf32>, tensor<?x3xf32>) -> tensor<2x3xf32>
// CHECK-NOT:   hipdnn.tie_dims
func.func @main(%arg0: tensor<2x?xf32>, %arg1: tensor<?x3xf32>) -> tensor<*xf32> {
  %0 = "onnx.mul"(%arg0, %arg1) {operand_roles = [0 : i64, 1 : i64]} : (tensor<2x?xf32>, tensor<?x3xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

// Slice starts become arith over the input dims, tied to the op by hipdnn.tie_param; steps stay
// constants.  start = min(max(d0 - 3, 0), d0); count = max(min(d0, 100) - start, 0).
// CHECK-LABEL: func.func @main
// CHECK:       [[S:%.+]] = "hipdnn.slice"(%arg0) {onnx.node = "onnx.slice", steps = [1]}
// CHECK:       [[D:%.+]] = tensor.dim %arg0
// CHECK:       [[E:%.+]] = arith.minsi [[D]], %c100
// CHECK:       [[X:%.+]] = arith.addi [[D]], %c-3
// CHECK:       [[Y:%.+]] = arith.maxsi [[X]], %c0
// CHECK:       [[START:%.+]] = arith.minsi [[Y]], [[D]]
// CHECK:       [[L:%.+]] = arith.subi [[E]], [[START]]
// CHECK:       [[N:%.+]] = arith.maxsi [[L]], %c0
// CHECK:       "hipdnn.tie_dims"([[S]], [[N]])
// CHECK:       "hipdnn.tie_param"([[S]], [[START]]) {name = "starts"}
func.func @main(%arg0: tensor<?xf32>) -> tensor<?xf32> {
  %0 = "hipdnn.constant"() {name = "s", values = [-3]} : () -> tensor<1xi64>
  %1 = "hipdnn.constant"() {name = "e", values = [100]} : () -> tensor<1xi64>
  %2 = "onnx.slice"(%arg0, %0, %1) {operand_roles = [0 : i64, 1 : i64, 2 : i64]} : (tensor<?xf32>, tensor<1xi64>, tensor<1xi64>) -> tensor<?xf32>
  return %2 : tensor<?xf32>
}

// -----

// A static relation that does not hold is refused at compile time, naming the node.
// CHECK: // error: node 'r': input shape [6] has 6 elements but target shape [4, 2] has 8
func.func @main(%arg0: tensor<6xf32>) -> tensor<4x2xf32> {
  %0 = "hipdnn.constant"() {name = "s", values = [4, 2]} : () -> tensor<2xi64>
  %1 = "onnx.reshape"(%arg0, %0) {operand_roles = [0 : i64, 1 : i64], "onnx.node" = "node 'r'"} : (tensor<6xf32>, tensor<2xi64>) -> tensor<4x2xf32>
  return %1 : tensor<4x2xf32>
}

// -----

// MatMul broadcasts the batch dims (d0 against 3: valid only when d0 is 1 or 3, so the result's is
// 3); the result is fully static, so no tie.
// CHECK-LABEL: func.func @main(%arg0: tensor<?x1x4xf32>, %arg1: tensor<3x4x5xf32>) -> tensor<3x1x5xf32>
// CHECK:       "hipdnn.matmul"(%arg0, %arg1) {onnx.node = "node 'mm'"} : (tensor<?x1x4xf32>, tensor<3x4x5xf32>) -> tensor<3x1x5xf32>
// CHECK-NOT:   hipdnn.tie_dims
func.func @main(%arg0: tensor<?x1x4xf32>, %arg1: tensor<3x4x5xf32>) -> tensor<?x3x1x5xf32> {
  %0 = "onnx.matmul"(%arg0, %arg1) {operand_roles = [0 : i64, 1 : i64], "onnx.node" = "node 'mm'"} : (tensor<?x1x4xf32>, tensor<3x4x5xf32>) -> tensor<?x3x1x5xf32>
  return %0 : tensor<?x3x1x5xf32>
}

// -----

// A Reduce with keepdims other than 0 or 1 drops the axes, as onnxruntime does.
// CHECK-LABEL: func.func @main
// CHECK:       "hipdnn.reduce"(%arg0) {axes = [1], onnx.node = "onnx.reduce_sum", op = "SUM"} : (tensor<3x4xf32>) -> tensor<3xf32>
func.func @main(%arg0: tensor<3x4xf32>) -> tensor<3xf32> {
  %0 = "hipdnn.constant"() {name = "a", values = [1]} : () -> tensor<1xi64>
  %1 = "onnx.reduce_sum"(%arg0, %0) {operand_roles = [0 : i64, 1 : i64], "onnx.keepdims" = 2 : i64} : (tensor<3x4xf32>, tensor<1xi64>) -> tensor<3xf32>
  return %1 : tensor<3xf32>
}

// -----

// Gemm transposes B for any nonzero transB (here -2), and says so with trans_b = 1.
// CHECK-LABEL: func.func @main
// CHECK:       "hipdnn.gemm"(%arg0, %arg1) {alpha = 1.000000e+00 : f64, beta = 1.000000e+00 : f64, onnx.node = "onnx.gemm", trans_a = 0 : i64, trans_b = 1 : i64} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
func.func @main(%arg0: tensor<2x4xf32>, %arg1: tensor<3x4xf32>) -> tensor<2x3xf32> {
  %0 = "onnx.gemm"(%arg0, %arg1) {operand_roles = [0 : i64, 1 : i64], "onnx.transB" = -2 : i64} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// A Reshape target whose length is unknown (read from an input of dynamic size) is refused.
// CHECK: // error: node 'r': the target shape must be computable from input shapes and constants
func.func @main(%arg0: tensor<4xf32>, %arg1: tensor<?xi64>) -> tensor<*xf32> {
  %0 = "onnx.reshape"(%arg0, %arg1) {operand_roles = [0 : i64, 1 : i64], "onnx.node" = "node 'r'"} : (tensor<4xf32>, tensor<?xi64>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

// Squeeze of an axis whose size is not 1 is a model error.
// CHECK: // error: node 'q': axis 0 of input shape [3, 1] has size 3; Squeeze removes only axes of size 1
func.func @main(%arg0: tensor<3x1xf32>) -> tensor<1xf32> {
  %0 = "hipdnn.constant"() {name = "a", values = [0]} : () -> tensor<1xi64>
  %1 = "onnx.squeeze"(%arg0, %0) {operand_roles = [0 : i64, 1 : i64], "onnx.node" = "node 'q'"} : (tensor<3x1xf32>, tensor<1xi64>) -> tensor<1xf32>
  return %1 : tensor<1xf32>
}

// -----

// Static dims whose byte size overflows int64 are a model error.
// CHECK: // error: node 'e': the output shape [1099511627776, 1099511627776] needs 4835703278458516698824704 bytes, more than int64 can address; the model's dims are too large
func.func @main(%arg0: tensor<1x1xf32>) -> tensor<?x?xf32> {
  %0 = "hipdnn.constant"() {name = "s", values = [1099511627776, 1099511627776]} : () -> tensor<2xi64>
  %1 = "onnx.expand"(%arg0, %0) {operand_roles = [0 : i64, 1 : i64], "onnx.node" = "node 'e'"} : (tensor<1x1xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return %1 : tensor<?x?xf32>
}

// -----

// Static dims that do not broadcast are a model error.
// CHECK: // error: node 'a': dimensions 3 and 4 do not broadcast
func.func @main(%arg0: tensor<3xf32>, %arg1: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "onnx.add"(%arg0, %arg1) {operand_roles = [0 : i64, 1 : i64], "onnx.node" = "node 'a'"} : (tensor<3xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Reduce axes must be 1-D.
// CHECK: // error: node 'r': the axes input has rank 0; it must be 1-D
func.func @main(%arg0: tensor<3x4xf32>) -> tensor<3xf32> {
  %0 = "hipdnn.constant"() {name = "a", values = [1]} : () -> tensor<i64>
  %1 = "onnx.reduce_sum"(%arg0, %0) {operand_roles = [0 : i64, 1 : i64], "onnx.node" = "node 'r'"} : (tensor<3x4xf32>, tensor<i64>) -> tensor<3xf32>
  return %1 : tensor<3xf32>
}
