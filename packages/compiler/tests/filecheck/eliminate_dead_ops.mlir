// RUN: hipdnn-ep-compile opt %s --pass-pipeline=eliminate-dead-ops | filecheck %s

// Unused chains (a host value and the alias reading it) go; what the result needs stays.
// CHECK-LABEL: func.func @main
// CHECK-NOT:   hipdnn.host_tensor
// CHECK-NOT:   hipdnn.alias
// CHECK:       %[[R:.*]] = "hipdnn.unary"(%arg0) {{.*}}op = "RELU"
// CHECK:       return %[[R]]
func.func @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  %0 = "hipdnn.host_tensor"() {values = ["2"], "hipdnn.dims" = [["1"]]} : () -> tensor<1xi64>
  %1 = "hipdnn.alias"(%0) {"hipdnn.dims" = [["1"]]} : (tensor<1xi64>) -> tensor<1xi64>
  %2 = "hipdnn.unary"(%arg0) {op = "RELU", "hipdnn.dims" = [["2"]]} : (tensor<2xf32>) -> tensor<2xf32>
  return %2 : tensor<2xf32>
}
