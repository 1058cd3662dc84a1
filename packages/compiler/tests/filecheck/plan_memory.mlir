// RUN: hipdnn-ep-compile opt %s --pass-pipeline=plan-memory --split-input-file | filecheck %s

// Liveness: %2 reuses %0's place; the result is an output of its own.  Offsets and the pool size
// are index values (hipdnn.place per pool buffer, one hipdnn.pool).
// CHECK-LABEL: func.func @main
// CHECK-DAG:   [[C0:%.+]] = arith.constant 0 : index
// CHECK-DAG:   [[C256:%.+]] = arith.constant 256 : index
// CHECK-DAG:   [[C512:%.+]] = arith.constant 512 : index
// CHECK:       [[A:%.+]] = "hipdnn.unary"(%arg0) {{.*}}hipdnn.storage = "pool", op = "RELU"
// CHECK:       [[B:%.+]] = "hipdnn.unary"({{.*}}hipdnn.storage = "pool", op = "EXP"
// CHECK:       [[C:%.+]] = "hipdnn.unary"({{.*}}hipdnn.storage = "pool", op = "TANH"
// CHECK:       hipdnn.output_index = 0 : i64, hipdnn.storage = "output", op = "NEG"
// CHECK:       "hipdnn.place"([[A]], [[C0]])
// CHECK-NEXT:  "hipdnn.place"([[B]], [[C256]])
// CHECK-NEXT:  "hipdnn.place"([[C]], [[C0]])
// CHECK-NEXT:  "hipdnn.pool"([[C512]])
func.func @main(%arg0: tensor<64xf32>) -> tensor<64xf32> {
  %0 = "hipdnn.unary"(%arg0) {op = "RELU", "hipdnn.dims_slot" = [-1]} : (tensor<64xf32>) -> tensor<64xf32>
  %1 = "hipdnn.unary"(%0) {op = "EXP", "hipdnn.dims_slot" = [-1]} : (tensor<64xf32>) -> tensor<64xf32>
  %2 = "hipdnn.unary"(%1) {op = "TANH", "hipdnn.dims_slot" = [-1]} : (tensor<64xf32>) -> tensor<64xf32>
  %3 = "hipdnn.unary"(%2) {op = "NEG", "hipdnn.dims_slot" = [-1]} : (tensor<64xf32>) -> tensor<64xf32>
  return %3 : tensor<64xf32>
}

// -----

// Dynamic sizes give offsets that are arith over the input dims: the EXP buffer sits above the RELU
// one, at 256 * ceildiv(4 * d0, 256); the pool size shares that ceildiv (cse).
// CHECK-LABEL: func.func @main
// CHECK:       [[A:%.+]] = "hipdnn.unary"(%arg0) {{.*}}op = "RELU"
// CHECK:       [[D:%.+]] = tensor.dim %arg0
// CHECK:       [[B:%.+]] = "hipdnn.unary"([[A]]) {{.*}}op = "EXP"
// CHECK:       "hipdnn.place"([[A]], %c0)
// CHECK-NEXT:  [[BYTES:%.+]] = arith.muli [[D]], %c4 : index
// CHECK-NEXT:  [[BLOCKS:%.+]] = arith.ceildivsi [[BYTES]], %c256 : index
// CHECK-NEXT:  [[OFF:%.+]] = arith.muli [[BLOCKS]], %c256 : index
// CHECK-NEXT:  "hipdnn.place"([[B]], [[OFF]])
// CHECK-NEXT:  [[POOL:%.+]] = arith.muli [[BLOCKS]], %c512 : index
// CHECK-NEXT:  "hipdnn.pool"([[POOL]])
func.func @main(%arg0: tensor<?xf32>) -> tensor<?xf32> {
  %0 = "hipdnn.unary"(%arg0) {op = "RELU", "hipdnn.dims_slot" = [0]} : (tensor<?xf32>) -> tensor<?xf32>
  %t1_2 = arith.constant 0 : index
  %t1_3 = tensor.dim %arg0, %t1_2 : tensor<?xf32>
  "hipdnn.tie_dims"(%0, %t1_3) : (tensor<?xf32>, index) -> ()
  %1 = "hipdnn.unary"(%0) {op = "EXP", "hipdnn.dims_slot" = [0]} : (tensor<?xf32>) -> tensor<?xf32>
  %t2_2 = arith.constant 0 : index
  %t2_3 = tensor.dim %arg0, %t2_2 : tensor<?xf32>
  "hipdnn.tie_dims"(%1, %t2_3) : (tensor<?xf32>, index) -> ()
  %2 = "hipdnn.binary"(%0, %1) {op = "ADD", "hipdnn.dims_slot" = [0]} : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  %t3_2 = arith.constant 0 : index
  %t3_3 = tensor.dim %arg0, %t3_2 : tensor<?xf32>
  "hipdnn.tie_dims"(%2, %t3_3) : (tensor<?xf32>, index) -> ()
  return %2 : tensor<?xf32>
}

// -----

// A returned program input and a result returned twice get copies (each output is a buffer of its
// own); the copy of the input keeps the caller's dims array (-2); nothing lives in the pool.
// CHECK-LABEL: func.func @main
// CHECK-NOT:   hipdnn.pool
// CHECK:       [[R:%.+]] = "hipdnn.unary"(%arg0) {{.*}}hipdnn.output_index = 1 : i64, hipdnn.storage = "output"
// CHECK:       "hipdnn.copy"(%arg0) {hipdnn.dims_slot = [-2], hipdnn.output_index = 0 : i64, hipdnn.storage = "output"}
// CHECK:       "hipdnn.copy"([[R]]) {{.*}}hipdnn.output_index = 2 : i64, hipdnn.storage = "output"
// CHECK-NOT:   "hipdnn.copy"
// CHECK-NOT:   hipdnn.pool
func.func @main(%arg0: tensor<?xf32>) -> (tensor<?xf32>, tensor<?xf32>, tensor<?xf32>) {
  %0 = "hipdnn.unary"(%arg0) {op = "RELU", "hipdnn.dims_slot" = [0]} : (tensor<?xf32>) -> tensor<?xf32>
  %t1_2 = arith.constant 0 : index
  %t1_3 = tensor.dim %arg0, %t1_2 : tensor<?xf32>
  "hipdnn.tie_dims"(%0, %t1_3) : (tensor<?xf32>, index) -> ()
  return %arg0, %0, %0 : tensor<?xf32>, tensor<?xf32>, tensor<?xf32>
}

// -----

// A value written in two forms (the same product, associated two ways: cse cannot merge them) is
// computed once: the later form's users take the earlier value, and the later form is dropped.
// CHECK-LABEL: func.func @main
// CHECK:       [[D0:%.+]] = tensor.dim %arg0, %c0
// CHECK:       [[D1:%.+]] = tensor.dim %arg0, %c1
// CHECK:       [[P:%.+]] = arith.muli [[D0]], [[D1]] : index
// CHECK-NEXT:  [[Q:%.+]] = arith.muli [[P]], %c2 : index
// CHECK-NOT:   arith.muli {{.*}}%c2
// CHECK:       "hipdnn.tie_dims"(%{{.+}}, [[Q]]) : (tensor<?xf32>, index) -> ()
// CHECK:       "hipdnn.tie_dims"(%{{.+}}, [[Q]]) : (tensor<?xf32>, index) -> ()
// CHECK:       "hipdnn.pool"(
func.func @main(%arg0: tensor<?x?xf32>, %arg1: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %d0 = tensor.dim %arg0, %c0 : tensor<?x?xf32>
  %d1 = tensor.dim %arg0, %c1 : tensor<?x?xf32>
  %p = arith.muli %d0, %d1 : index
  %q = arith.muli %p, %c2 : index
  %r = arith.muli %d1, %c2 : index
  %s = arith.muli %r, %d0 : index
  %0 = "hipdnn.unary"(%arg1) {op = "RELU", "hipdnn.dims_slot" = [0]} : (tensor<?xf32>) -> tensor<?xf32>
  "hipdnn.tie_dims"(%0, %q) : (tensor<?xf32>, index) -> ()
  %1 = "hipdnn.unary"(%0) {op = "EXP", "hipdnn.dims_slot" = [0]} : (tensor<?xf32>) -> tensor<?xf32>
  "hipdnn.tie_dims"(%1, %s) : (tensor<?xf32>, index) -> ()
  return %1 : tensor<?xf32>
}
