// RUN: hipdnn-ep-compile opt %s --pass-pipeline=lower-to-llvm --split-input-file | filecheck %s
// RUN: hipdnn-ep-compile opt %s --pass-pipeline=lower-to-llvm --split-input-file --abi 1.2 | filecheck %s --check-prefix=ABI12
// RUN: not hipdnn-ep-compile opt %s --pass-pipeline=lower-to-llvm --split-input-file --abi 1.0 | filecheck %s --check-prefix=ABI10

// Only the runtime functions the program calls are declared (from the manifest), in the order of
// first use, then the entry point calls them: pool (its 256 bytes), output allocation (from ABI 1.3
// the output's shape is stored first and hipdnn_ep_output_alloc gives output 0 its 24 bytes, the
// host's memory when it provides some), one kernel per op with the manifest's enum code of its op
// (binary ADD 0, unary TANH 2), and frees outputs on failure.  ({{\A}}: the start of the output.)
// CHECK:       {{\A}}llvm.func @hipdnn_ep_get_pool_base(!llvm.ptr, i64, !llvm.ptr) -> i32
// CHECK-NEXT:  llvm.func @hipdnn_ep_output_alloc(!llvm.ptr, !llvm.ptr, i32, i64) -> i32
// CHECK-NEXT:  llvm.func @hipdnn_ep_kernel_binary(!llvm.ptr, !llvm.ptr) -> i32
// CHECK-NEXT:  llvm.func @hipdnn_ep_kernel_unary(!llvm.ptr, !llvm.ptr) -> i32
// CHECK-NEXT:  llvm.func @hipdnn_ep_free(!llvm.ptr, !llvm.ptr) -> i32
// CHECK-NEXT:  llvm.mlir.global private constant
// CHECK:       llvm.func @hipdnn_ep_program_run(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: !llvm.ptr) -> i32 {
// CHECK-DAG:   [[ADD:%[0-9]+]] = llvm.mlir.constant(0 : i64) : i64
// CHECK-DAG:   [[TANH:%[0-9]+]] = llvm.mlir.constant(2 : i64) : i64
// CHECK-DAG:   [[OUT0:%[0-9]+]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-DAG:   [[BYTES:%[0-9]+]] = llvm.mlir.constant(24 : i64) : i64
// CHECK-DAG:   [[POOL:%[0-9]+]] = llvm.mlir.constant(256 : i64) : i64
// CHECK:       llvm.call @hipdnn_ep_get_pool_base(%arg0, [[POOL]], %{{[0-9]+}})
// CHECK:       llvm.call @hipdnn_ep_output_alloc(%arg0, %arg2, [[OUT0]], [[BYTES]])
// CHECK:       llvm.store [[ADD]], %{{[0-9]+}} : i64, !llvm.ptr
// CHECK:       llvm.call @hipdnn_ep_kernel_binary(
// CHECK:       llvm.store [[TANH]], %{{[0-9]+}} : i64, !llvm.ptr
// CHECK:       llvm.call @hipdnn_ep_kernel_unary(
// CHECK:       llvm.call @hipdnn_ep_free(
// CHECK-NOT:   llvm.func
//
// Targeting ABI 1.2 gives the 1.2 program, which allocates the output with hipdnn_ep_malloc.
// ABI12:       llvm.func @hipdnn_ep_get_pool_base(!llvm.ptr, i64, !llvm.ptr) -> i32
// ABI12-NEXT:  llvm.func @hipdnn_ep_malloc(!llvm.ptr, i64, !llvm.ptr) -> i32
// ABI12-NEXT:  llvm.func @hipdnn_ep_kernel_binary(!llvm.ptr, !llvm.ptr) -> i32
// ABI12-NOT:   hipdnn_ep_output_alloc
// ABI12:       llvm.call @hipdnn_ep_malloc(%arg0, %{{[0-9]+}}, %{{[0-9]+}})
// ABI12-NOT:   hipdnn_ep_output_alloc
//
// ABI 1.0 has no kernels: the first one the graph needs is refused, naming the ABI that has it.
// ABI10: // error: the graph needs runtime function 'hipdnn_ep_kernel_binary', introduced in ABI 1.1; the target ABI is 1.0. Fix: target ABI 1.1 or newer (--abi 1.1, with hipdnn-ep-runtime>=1.1 installed)
func.func @main(%arg0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %c0 = arith.constant 0 : index
  %c256 = arith.constant 256 : index
  "hipdnn.pool"(%c256) : (index) -> ()
  %0 = "hipdnn.weight"() {name = "w", "hipdnn.dims_slot" = [-1]} : () -> tensor<3xf32>
  %1 = "hipdnn.binary"(%arg0, %0) {op = "ADD", "hipdnn.dims_slot" = [-1], "hipdnn.storage" = "pool"} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  "hipdnn.place"(%1, %c0) : (tensor<2x3xf32>, index) -> ()
  %2 = "hipdnn.unary"(%1) {op = "TANH", "hipdnn.dims_slot" = [-1], "hipdnn.storage" = "output", "hipdnn.output_index" = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %2 : tensor<2x3xf32>
}

// -----

// Dynamic sizes: the input dim is loaded once and is one SSA value; 4*d0_0 (checked for
// overflow through the high half of the 128-bit product) is computed once and shared by the pool
// size, the EXP result's offset and the output's byte size (cse); the ceildiv by 256 too.  The
// shape arithmetic is emitted as arith ops, and convert-arith-to-llvm leaves none of them.
// CHECK:       llvm.func @hipdnn_ep_program_run(
// CHECK-NOT:   arith.
// CHECK-NOT:   with.overflow
// CHECK:       %[[DIM:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i64
// CHECK-NEXT:  %[[WIDE:.*]] = llvm.sext %[[DIM]] : i64 to i128
// CHECK:       %[[PROD:.*]] = llvm.mul %[[WIDE]], %{{.*}} : i128
// CHECK-NEXT:  %[[BYTES:.*]] = llvm.trunc %[[PROD]] : i128 to i64
// CHECK:       %[[BUMP:.*]] = llvm.add %[[BYTES]], %{{.*}} : i64
// CHECK:       %[[BLOCKS:.*]] = llvm.sdiv %[[BUMP]], %{{.*}} : i64
// CHECK-NOT:   llvm.sdiv
// CHECK:       llvm.call @hipdnn_ep_get_pool_base(
// CHECK:       llvm.sext %[[BLOCKS]] : i64 to i128
// CHECK:       llvm.intr.smax(%[[BYTES]], %{{.*}}) : (i64, i64) -> i64
// CHECK-NOT:   llvm.sdiv
// CHECK-NOT:   arith.
// CHECK-NOT:   with.overflow
func.func @main(%arg0: tensor<?xf32>) -> tensor<?xf32> attributes {"hipdnn.host_scratch_slots" = 1 : i64} {
  %c512 = arith.constant 512 : index
  %c4 = arith.constant 4 : index
  %c256 = arith.constant 256 : index
  %c0 = arith.constant 0 : index
  %0 = "hipdnn.unary"(%arg0) {op = "RELU", "hipdnn.dims_slot" = [0], "hipdnn.storage" = "pool"} : (tensor<?xf32>) -> tensor<?xf32>
  %dim = tensor.dim %arg0, %c0 : tensor<?xf32>
  "hipdnn.tie_dims"(%0, %dim) : (tensor<?xf32>, index) -> ()
  %1 = "hipdnn.unary"(%0) {op = "EXP", "hipdnn.dims_slot" = [0], "hipdnn.storage" = "pool"} : (tensor<?xf32>) -> tensor<?xf32>
  "hipdnn.tie_dims"(%1, %dim) : (tensor<?xf32>, index) -> ()
  %2 = "hipdnn.binary"(%0, %1) {op = "ADD", "hipdnn.dims_slot" = [0], "hipdnn.storage" = "output", "hipdnn.output_index" = 0 : i64} : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  "hipdnn.tie_dims"(%2, %dim) : (tensor<?xf32>, index) -> ()
  "hipdnn.place"(%0, %c0) : (tensor<?xf32>, index) -> ()
  %3 = arith.muli %dim, %c4 : index
  %4 = arith.ceildivsi %3, %c256 : index
  %5 = arith.muli %4, %c256 : index
  "hipdnn.place"(%1, %5) : (tensor<?xf32>, index) -> ()
  %6 = arith.muli %4, %c512 : index
  "hipdnn.pool"(%6) : (index) -> ()
  return %2 : tensor<?xf32>
}

// -----

// The shape arithmetic is read from the IR's index values: the input's dim and the host-read element
// (copied from the scratch) are loaded once; the subtraction is checked (its overflow bit is tested
// before the check's compare decides), the select compares the element with 0 directly, and the
// check's values, the shown element included, are stored for the runtime's message in the failing
// branch only.  The output's dim (the select) is written to the dims slot.
// CHECK-LABEL: llvm.func @hipdnn_ep_program_run(
// CHECK:       llvm.call @hipdnn_ep_memcpy(
// CHECK:       %[[V:.*]] = llvm.load %[[SCRATCH:.*]] : !llvm.ptr -> i64
// CHECK-NEXT:  %[[DIM:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i64
// CHECK-NEXT:  %[[DIFF:.*]] = llvm.sub %[[DIM]], %[[V]] : i64
// CHECK:       %[[WRAP:.*]] = llvm.icmp "slt" %{{.*}}, %{{.*}} : i64
// CHECK-NEXT:  %[[NEG:.*]] = llvm.icmp "slt" %[[V]], %{{.*}} : i64
// CHECK-NEXT:  %[[N:.*]] = llvm.select %[[NEG]], %[[DIM]], %[[DIFF]] : i1, i64
// CHECK-NEXT:  %[[OK:.*]] = llvm.icmp "sle" %[[N]], %[[DIM]] : i64
// CHECK-NEXT:  %[[FITS:.*]] = llvm.icmp "eq" %[[WRAP]], %{{.*}} : i1
// CHECK-NEXT:  llvm.cond_br %[[FITS]], ^[[NEXT:bb[0-9]+]], ^{{bb[0-9]+}}
// CHECK:       ^[[NEXT]]:
// CHECK-NEXT:  llvm.cond_br %[[OK]], ^[[PASS:bb[0-9]+]], ^[[EXPLAIN:bb[0-9]+]]
// CHECK:       ^[[EXPLAIN]]:
// CHECK-NEXT:  llvm.store %[[N]], %[[VALUES:.*]] : i64, !llvm.ptr
// CHECK:       llvm.store %[[DIM]],
// CHECK:       llvm.store %[[V]],
// CHECK-NEXT:  llvm.call @hipdnn_ep_set_error_message(%arg0, %{{.*}}, %[[VALUES]], %{{.*}})
// CHECK:       ^[[PASS]]:
// CHECK:       llvm.store %[[N]], %{{.*}} : i64, !llvm.ptr
// CHECK:       llvm.call @hipdnn_ep_output_alloc(
// CHECK-NOT:   llvm.sub
func.func @main(%arg0: tensor<?xf32>, %arg1: tensor<1xi64>) -> tensor<?xf32> attributes {"hipdnn.host_scratch_slots" = 2 : i64, "hipdnn.input_value_slots" = [[1, 0, 1]]} {
  %c0 = arith.constant 0 : index
  %dim = tensor.dim %arg0, %c0 : tensor<?xf32>
  %e = tensor.extract %arg1[%c0] : tensor<1xi64>
  %v = arith.index_cast %e : i64 to index
  %d = arith.subi %dim, %v : index
  %neg = arith.cmpi slt, %v, %c0 : index
  %n = arith.select %neg, %dim, %d : index
  "hipdnn.check"(%n, %dim, %v) {where = "node 'x'", kind = "le", text = "{0} <= {1} (start {2})"} : (index, index, index) -> ()
  %0 = "hipdnn.unary"(%arg0) {op = "RELU", "hipdnn.dims_slot" = [1], "hipdnn.storage" = "output", "hipdnn.output_index" = 0 : i64} : (tensor<?xf32>) -> tensor<?xf32>
  "hipdnn.tie_dims"(%0, %n) : (tensor<?xf32>, index) -> ()
  return %0 : tensor<?xf32>
}
