// RUN: hipdnn-ep-compile opt %s --pass-pipeline=eliminate-dead-ops | filecheck %s

// Unused chains (a host value and the alias reading it) go, and so does an op whose only users are
// its ties, with them and the arithmetic only they needed; what the result needs stays, and so do
// the checks (a promised relation is verified even when its node's result goes unused).
// CHECK-LABEL: func.func @main
// CHECK-NOT:   hipdnn.host_tensor
// CHECK-NOT:   hipdnn.alias
// CHECK-NOT:   arith.muli
// CHECK-NOT:   "hipdnn.unary"(%arg0) {{.*}}op = "EXP"
// CHECK:       "hipdnn.check"
// CHECK:       %[[R:.*]] = "hipdnn.unary"(%arg0) {{.*}}op = "RELU"
// CHECK-NEXT:  "hipdnn.tie_dims"(%[[R]], %[[D:.*]])
// CHECK-NOT:   hipdnn.tie_dims
// CHECK:       return %[[R]]
func.func @main(%arg0: tensor<?xf32>) -> tensor<?xf32> {
  %c2 = arith.constant 2 : index
  %c0 = arith.constant 0 : index
  %0 = "hipdnn.host_tensor"(%c2) : (index) -> tensor<1xi64>
  %1 = "hipdnn.alias"(%0) : (tensor<1xi64>) -> tensor<1xi64>
  %d = tensor.dim %arg0, %c0 : tensor<?xf32>
  %twice = arith.muli %d, %c2 : index
  "hipdnn.check"(%d, %c2) {kind = "le", where = "node 'x'", text = "{0} <= {1}"} : (index, index) -> ()
  %2 = "hipdnn.unary"(%arg0) {op = "EXP"} : (tensor<?xf32>) -> tensor<?xf32>
  "hipdnn.tie_dims"(%2, %twice) : (tensor<?xf32>, index) -> ()
  %3 = "hipdnn.unary"(%arg0) {op = "RELU"} : (tensor<?xf32>) -> tensor<?xf32>
  "hipdnn.tie_dims"(%3, %d) : (tensor<?xf32>, index) -> ()
  return %3 : tensor<?xf32>
}
