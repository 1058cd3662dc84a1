"""Lower the planned hipdnn IR to an LLVM-dialect module: the artifact's host program.

The program (the manifest's program entry) reads input dims, checks ranks, dtypes and static
dims, computes dynamic dims and shape values into the host scratch, takes the pool, allocates
outputs, then calls one kernel per op.  Every call's status is checked; on failure the
outputs allocated so far are freed and the status returned.  Declarations of the runtime
functions come from the manifest, only for the functions actually called: that set is the
artifact's import list.

Shape values are read from the IR's `index` SSA values, not from symbolic.py's expressions: the dims
of `hipdnn.tie_dims`, a kernel's run-time parameters (`hipdnn.tie_param`), the elements of
`hipdnn.materialize`, the operands of `hipdnn.check`, the offsets of `hipdnn.place` and the size of
`hipdnn.pool`, lowered to checked i64 arithmetic by shape_code.py.  What the IR does not state as an
index value, a tensor's byte size (the output allocations, copies and their "fits" checks), is computed
from its dims' values.  Symbolic expressions (ir.dim_expr) are read only for the metadata: the output
dims, the checks' text and values, the pool size.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from torch_mlir import ir
from torch_mlir.dialects import llvm

from .. import checks as chk
from .. import dtypes
from .. import ir as hir
from .. import symbolic as sym
from ..abi import RuntimeAbi
from ..errors import AbiTargetError, UnsupportedError
from ..ops import kernel
from ..passes.plan_memory import attr_name, size_bytes, storage
from . import runtime_calls as rc
from .emitter import FunctionEmitter, function_type, linkage, llvm_type
from .shape_code import ByteSize, ShapeCode, constant_of


@dataclass
class LoweredProgram:
    module: ir.Module  # the LLVM-dialect program, without the metadata global
    imports: list[str]  # runtime functions the program calls, in first-use order
    weights: list[str]  # weight names in program-input order (after the graph inputs)
    n_inputs: int
    pool_size: sym.Expr | None
    host_scratch_slots: int
    output_dims: list[list[str]] = field(default_factory=list)
    # The newest ABI minor among the element types and enum values the calls use (functions aside).
    min_minor: int = 0
    checks: list[chk.Check] = field(default_factory=list)  # what the program verifies, in order
    # the node of each kernel call, in call order (the runtime names the node of a failing call)
    kernel_nodes: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The program as LLVM-dialect text (top-level ops one after the other, no module wrapper)."""
        return "\n".join(str(op) for op in self.module.body.operations) + "\n"

# How host-computed values are stored for a device tensor of each element type: shape values
# (int64, int32) and the booleans of mask code folded on the host (Equal, comparisons), one byte each.
HOST_ELEMENT = {hir.INT64: "i64", 6: "i32", 9: "i8"}
ELEMENT_BYTES = {"i64": 8, "i32": 4, "i8": 1}


class _Lowering(ShapeCode):
    def __init__(self, module: ir.Module, abi: RuntimeAbi):
        self.module = module
        self.abi = abi
        self.imports: dict[str, object] = {}
        self.global_cache: dict[str, str] = {}
        # index value of the IR (or an input dim, a host-read element, a byte size) -> its i64 value on
        # the main path; `side` holds what an explain block computes for itself (it does not dominate)
        self.lowered: dict = {}
        self.side: dict | None = None
        self.data: dict[ir.Value, ir.Value] = {}  # tensor -> its data pointer
        self.dims_ptr: dict[ir.Value, ir.Value] = {}  # tensor -> the pointer to its dims array
        self.weights: list[str] = []
        self.ref = abi.struct(abi.name(rc.TENSOR_REF))
        self.args_struct = abi.struct(abi.name(rc.KERNEL_ARGS))
        func = hir.main_func(module)
        self.n_inputs = len(func.regions[0].blocks[0].arguments)
        self.slots = hir.get_int(func, "hipdnn.host_scratch_slots", 0)
        self.pool_size = hir.pool_size(module)  # for the metadata (pool_bytes)
        self.pool_value = hir.pool_size_value(module)
        self.offsets = hir.placed_offsets(module)
        self.min_minor = 0
        self.checks: list[chk.Check] = []
        self.kernel_nodes: list[str] = []
        self.poison: ir.Value | None = None  # i1: some shape arithmetic since the last guard overflowed
        # the program: an LLVM-dialect module in the planned module's context, built in run()
        self.ctx = module.context
        with self.ctx, ir.Location.unknown():
            self.out = ir.Module.create()
            entry = abi.program_entry
            params = [p["llvm"] for p in entry["params"]]
            with ir.InsertionPoint(self.out.body):
                self.func = llvm.LLVMFuncOp(entry["name"], ir.TypeAttr.get(
                    function_type(params, entry["returns"]["llvm"])))
            self.e = FunctionEmitter(self.func, [llvm_type(p) for p in params])
            self.fail = self.func.body.blocks.append(llvm_type("i32"))  # ^fail(%status: i32)

    # ------------------------------------------------------------ helpers
    def call(self, suffix_or_name: str, args: list[ir.Value], check: bool = True) -> ir.Value | None:
        name = suffix_or_name if suffix_or_name.startswith(self.abi.prefix + "_") else self.abi.name(suffix_or_name)
        fn = self.abi.function(name)  # raises AbiTargetError naming it when missing or too new
        if check:
            self.guard_overflow()
        self.imports.setdefault(name, fn)
        status = self.e.call(name, args, fn.returns_llvm)
        if check and status is not None:
            self.e.branch_unless(self.e.icmp("eq", status, self.e.const(0, "i32")), self.fail, status)
        return status

    def enum_value(self, enum: str, key: str) -> int:
        """An enum value for a call (refused when newer than the target), noting the minor it needs."""
        value = self.abi.enum_value(enum, key)
        self.min_minor = max(self.min_minor, self.abi.enum_since.get((enum, key), 0))
        return value

    def need_dtype(self, op: ir.Operation, fn, since: int, what: str, code: int) -> None:
        """Notes the minor from which the kernel accepts an element type; refuses one newer than the target."""
        if since > self.abi.target_minor:
            m = self.abi.major
            raise AbiTargetError(
                f"{hir.get_str(op, 'onnx.node', op.name)}: {fn.name} accepts element type "
                f"{dtypes.DTYPE_NAMES.get(code, code)} in {what} only from runtime ABI {m}.{since}; the target "
                f"ABI is {m}.{self.abi.target_minor}. Fix: target ABI {m}.{since} or newer (with a "
                f"hipdnn-ep-runtime>={m}.{since} installed)")
        self.min_minor = max(self.min_minor, since)

    def field(self, struct, base: ir.Value, name: str) -> tuple[ir.Value, str]:
        f = struct.fields[name]
        return self.e.gep(base, f.offset), f.llvm

    def store_field(self, struct, base: ir.Value, name: str, value: ir.Value) -> None:
        ptr, _ = self.field(struct, base, name)
        self.e.store(value, ptr)

    def load_field(self, struct, base: ir.Value, name: str) -> ir.Value:
        ptr, ty = self.field(struct, base, name)
        return self.e.load(ptr, ty)

    def input_ref(self, i: int) -> ir.Value:
        return self.e.gep(self.input_base, i * self.ref.size)

    def add_global(self, name: str, elem: str, count: int, value: ir.Attribute) -> None:
        """A private constant global `!llvm.array<count x elem>`, placed before the program's function."""
        with ir.InsertionPoint(self.func):
            llvm.GlobalOp(llvm.ArrayType.get(llvm_type(elem), count), name, linkage("private"), constant=True,
                          value=value, addr_space=0)

    def const_array(self, values: list[int], elem: str = "i64") -> ir.Value:
        values = values or [0]
        key = f"{elem}:{values}"
        if key not in self.global_cache:
            name = f"__hipdnn_const_{len(self.global_cache)}"
            ty = llvm_type(elem)
            data = ir.DenseElementsAttr.get([ir.IntegerAttr.get(ty, v) for v in values],
                                            type=ir.RankedTensorType.get([len(values)], ty))
            self.add_global(name, elem, len(values), data)
            self.global_cache[key] = name
        return self.e.addressof(self.global_cache[key])

    def can_call(self, suffix: str) -> bool:
        """Whether the target ABI has the runtime function (an optional call is left out, not refused)."""
        fn = self.abi.functions.get(self.abi.name(suffix))
        return fn is not None and fn.since <= self.abi.target_minor

    def string(self, text: str) -> ir.Value:
        """Pointer to a NUL-terminated constant string."""
        key = f"str:{text}"
        if key not in self.global_cache:
            data = text.encode() + b"\0"
            name = f"__hipdnn_str_{len(self.global_cache)}"
            self.add_global(name, "i8", len(data), ir.StringAttr.get(data))
            self.global_cache[key] = name
        return self.e.addressof(self.global_cache[key])

    def int_array(self, items: list, slot: int, elem: str = "i64") -> ir.Value:
        """Pointer to the array of `items` (ints, index values of the IR, input dims): constant data when
        static (slot -1), else written to the host scratch at `slot`."""
        width = ELEMENT_BYTES[elem]
        if slot < 0:
            static = [x if isinstance(x, int) else None if isinstance(x, tuple) else constant_of(x, None)
                      for x in items]
            if all(x is not None for x in static):
                return self.const_array(static, elem)
            base = self.e.alloca(width * len(items))  # not a slot, though not constant (not expected)
        else:
            base = self.e.gep(self.scratch, 8 * slot)
        for k, x in enumerate(items):
            v = self.value(x)
            if elem != "i64":
                v = self.e.trunc(v, elem)
            self.e.store(v, self.e.gep(base, width * k))
        return base

    def tensor_refs(self, items: list[tuple[ir.Value, ir.Value, int, int]]) -> ir.Value:
        """A stack array of tensor refs from (data, dims, rank, dtype)."""
        arr = self.e.alloca(self.ref.size * len(items))
        for k, (data, dims, rank, dtype) in enumerate(items):
            r = self.e.gep(arr, k * self.ref.size)
            self.store_field(self.ref, r, "data", data)
            self.store_field(self.ref, r, "dims", dims)
            self.store_field(self.ref, r, "rank", self.e.const(rank, "i32"))
            self.store_field(self.ref, r, "dtype", self.e.const(dtype, "i32"))
        return arr

    def ref_of(self, value: ir.Value) -> tuple[ir.Value, ir.Value, int, int]:
        return (self.data[value], self.dims_ptr[value], hir.rank(value), hir.element_dtype(value))

    def absent_ref(self) -> tuple[ir.Value, ir.Value, int, int]:
        """An optional kernel input left out: NULL data and dims, rank -1."""
        return (self.e.null(), self.e.null(), -1, 0)

    def param_ref(self, array_ptr: ir.Value, n: int) -> tuple[ir.Value, ir.Value, int, int]:
        return (array_ptr, self.const_array([n]), 1, hir.INT64)

    # ------------------------------------------------------------ program
    def run(self) -> LoweredProgram:
        with self.ctx, ir.Location.unknown():
            return self.build()

    def build(self) -> LoweredProgram:
        e = self.e
        # the entry's parameters in manifest order: state, inputs, outputs
        self.state, self.input_base, self.output_base = e.args
        ops = hir.ops(self.module)
        ret = ops[-1]
        block = hir.body(self.module)
        for k in range(len(ret.operands)):
            self.store_field(self.ref, e.gep(self.output_base, k * self.ref.size), "data", e.null())

        # 1. the inputs: their dtype, rank, static dims and data were checked against the metadata by
        # hipdnn_ep_artifact_run(_into), the only caller of the entry, so the program does not repeat it
        for i, arg in enumerate(block.arguments):
            ref = self.input_ref(i)
            self.data[arg] = self.load_field(self.ref, ref, "data")
            self.dims_ptr[arg] = self.load_field(self.ref, ref, "dims")

        # 2. host scratch: every dynamic array the program hands the runtime
        if self.slots:
            out = e.alloca(8)
            self.call(rc.HOST_SCRATCH, [self.state, e.const(8 * self.slots), out])
            self.scratch = e.load(out, "ptr")
        # small integer inputs read on the host (Reshape targets, Slice starts fed as graph inputs)
        self.input_values: dict[int, tuple[str, str]] = {}
        d2h = self.enum_value(self.abi.name("memcpy_kind"), "DEVICE_TO_HOST")
        for i, slot, n in hir.get_json_pairs(hir.main_func(self.module), "hipdnn.input_value_slots"):
            arg = block.arguments[i]
            elem = "i64" if hir.element_dtype(arg) == hir.INT64 else "i32"
            width = 8 if elem == "i64" else 4
            dst = e.gep(self.scratch, 8 * slot)
            if ir.RankedTensorType(arg.type).has_static_shape:
                size = e.const(n * width)
            else:  # symbolic length (hir.counted_input_values): at most n elements, the rest zero
                for k in range(n):
                    e.store(e.const(0), e.gep(dst, 8 * k))
                size = self.checked("mul", e.arith("MinSIOp", self.input_dim(i, 0), e.const(n)), e.const(width))
            self.call(rc.MEMCPY, [self.state, dst, self.data[arg], size, e.const(d2h, "i32")])
            self.input_values[i] = (dst, elem)
        # the shape relations the model promises hold before anything is sized from them
        # (the runtime names the first failing one from the metadata's copy of this list)
        # (each Check's expressions are the metadata's; the program computes its operands)
        checks = chk.read_with_operands(hir.main_func(self.module))
        for op in ops:
            for value in (r for k, r in enumerate(op.results) if storage(op, k) == "output"):
                t = chk.Text(size_bytes(value))
                text = f"the byte size of the output shape {t.dims(hir.dims_of(value))} overflows int64"
                checks.append((chk.Check(hir.get_str(op, "onnx.node", op.name), "fits", tuple(t.values), text),
                               [ByteSize(value)]))
        if self.pool_value is not None:
            checks.append((chk.Check("the memory plan", "fits", (self.pool_size,), "the pool size overflows int64"),
                           [self.pool_value]))
        distinct = {c.relation(): c for c, _ in reversed(checks) if not c.is_static()}
        checks = [(c, operands) for c, operands in checks if distinct.get(c.relation()) is c]
        self.checks = [c for c, _ in checks]
        for check, operands in checks:
            self.emit_check(check, operands)
        for op in ops:
            slots = hir.get_ints(op, "hipdnn.dims_slot")
            if slots is None:
                continue
            for r, slot in zip(op.results, slots, strict=False):
                if slot == -2:  # a copy of a program input keeps the caller's dims
                    self.dims_ptr[r] = self.dims_ptr[op.operands[0]]
                else:
                    self.dims_ptr[r] = self.int_array(self.dims(r), slot)

        # 3. pool for intermediates
        if self.pool_value is not None:
            out = e.alloca(8)
            self.call(rc.POOL, [self.state, self.index(self.pool_value), out])
            self.pool = e.load(out, "ptr")

        # 4. outputs, each in its own block: from 1.3 the program states each output's shape and asks
        # hipdnn_ep_output_alloc (the host's memory when it gives some), before that from the allocator
        in_place = self.can_call(rc.OUTPUT_ALLOC)
        for op in ops:
            for r, value in enumerate(op.results):
                if storage(op, r) == "output":
                    k = hir.get_int(op, attr_name("hipdnn.output_index", r))
                    size = e.arith("MaxSIOp", self.byte_size(value), e.const(1))
                    ref = e.gep(self.output_base, k * self.ref.size)
                    if in_place:  # the shape returned (a Reshape of the buffer may be what the graph outputs)
                        self.store_shape(ref, ret.operands[k])
                        self.call(rc.OUTPUT_ALLOC, [self.state, self.output_base, e.const(k, "i32"), size])
                        ptr = self.load_field(self.ref, ref, "data")
                    else:
                        out = e.alloca(8)
                        self.call(rc.MALLOC, [self.state, size, out])
                        ptr = e.load(out, "ptr")
                        self.store_field(self.ref, ref, "data", ptr)
                    self.data[value] = ptr
                elif storage(op, r) == "pool":
                    self.data[value] = e.gep(self.pool, self.index(self.offsets[value]))

        # 5. the ops
        for op in ops:
            self.lower_op(op)
        for k, value in enumerate(ret.operands):
            self.store_shape(e.gep(self.output_base, k * self.ref.size), value)
        self.guard_overflow()
        e.ret(e.const(0, "i32"))

        # failure: free what was allocated, report the status
        e.set_block(self.fail)
        if len(ret.operands) and any(storage(op, k) == "output" for op in ops for k in range(len(op.results))):
            for k in range(len(ret.operands)):
                ref = e.gep(self.output_base, k * self.ref.size)
                self.call(rc.FREE, [self.state, self.load_field(self.ref, ref, "data")], check=False)
                self.store_field(self.ref, ref, "data", e.null())
        e.ret(self.fail.arguments[0])
        return self.finish(ret)

    def store_shape(self, ref: ir.Value, value: ir.Value) -> None:
        """Stores an output's dims, rank and dtype in its tensor ref."""
        e = self.e
        self.store_field(self.ref, ref, "dims", self.dims_ptr[value])
        self.store_field(self.ref, ref, "rank", e.const(hir.rank(value), "i32"))
        self.store_field(self.ref, ref, "dtype", e.const(hir.element_dtype(value), "i32"))

    def lower_op(self, op: ir.Operation) -> None:
        e = self.e
        name = op.name
        if name == "func.return":
            return
        if name == "hipdnn.weight":
            self.weights.append(hir.get_str(op, "name"))
            ref = self.input_ref(self.n_inputs + len(self.weights) - 1)
            self.data[op.results[0]] = self.load_field(self.ref, ref, "data")
            return
        if name == "hipdnn.alias":
            self.data[op.results[0]] = self.data[op.operands[0]]
            return
        if name in ("hipdnn.host_tensor", "hipdnn.constant"):
            return  # unused by device code (materialize-host-scalars rewrote the used ones)
        value = op.results[0]
        if name == "hipdnn.materialize":
            dtype = hir.element_dtype(value)
            elem = HOST_ELEMENT[dtype]
            vals = list(op.operands)  # the elements, index values
            src = self.int_array(vals, hir.get_int(op, "hipdnn.values_slot"), elem)
            kind = self.enum_value(self.abi.name("memcpy_kind"), "HOST_TO_DEVICE")
            self.call(rc.MEMCPY, [self.state, self.data[value], src,
                                  e.const(len(vals) * ELEMENT_BYTES[elem]), e.const(kind, "i32")])
            return
        if name == "hipdnn.copy":
            kind = self.enum_value(self.abi.name("memcpy_kind"), "DEVICE_TO_DEVICE")
            self.call(rc.MEMCPY, [self.state, self.data[value], self.data[op.operands[0]],
                                  self.byte_size(value), e.const(kind, "i32")])
            return
        entry = kernel(name)
        if entry is None:
            raise UnsupportedError(f"{hir.get_str(op, 'onnx.node', name)}: no kernel for {name}")
        slots = hir.get_ints(op, "hipdnn.slots", list(range(len(op.operands))))
        inputs = [self.absent_ref()] * (max(slots, default=-1) + 1)
        for slot, v in zip(slots, op.operands, strict=True):
            inputs[slot] = self.ref_of(v)
        for p in entry.params:  # parameter arrays (axes, perm, starts, steps): int64 in host memory
            if p.symbolic:
                vals = hir.param_operands(op, p.attr)
                ptr = self.int_array(vals, hir.get_int(op, p.slot_attr))
                if p.counted:  # [count, values...]: a rank-1 ref of `count` values, its dims the count
                    inputs.append((self.e.gep(ptr, 8), ptr, 1, hir.INT64))
                    continue
            else:
                vals = hir.get_ints(op, p.attr)
                ptr = self.const_array(vals)
            inputs.append(self.param_ref(ptr, len(vals)))
        outputs = [self.ref_of(r) for r in op.results]
        fn = self.abi.function(self.abi.name(entry.kernel))
        codes = [hir.element_dtype(v) for v in op.operands]
        kind = hir.get_str(op, "op") if entry.op_enum else None
        for i, code in zip(slots, codes, strict=True):
            since = fn.input0_since(kind, code) if i == 0 else fn.later_input_since(i, code)
            self.need_dtype(op, fn, since, f"input {i}", code)
        for i in entry.param_inputs:
            self.need_dtype(op, fn, fn.later_input_since(i, dtypes.INT64), f"input {i}", dtypes.INT64)
        int_vals = []
        for a in fn.attrs_for("int", self.abi.target_minor):
            if a == "op" and entry.op_enum:
                int_vals.append(self.enum_value(self.abi.name(entry.op_enum), hir.get_str(op, "op")))
            else:
                int_vals.append(hir.get_int(op, a))
        float_vals = [hir.get_float(op, a) for a in fn.attrs_for("float", self.abi.target_minor)]
        self.kernel_nodes.append(hir.get_str(op, "onnx.node", name))
        self.kernel_call(fn.name, inputs, outputs, int_vals, float_vals)

    def kernel_call(self, kernel: str, inputs, outputs, int_vals: list[int], float_vals: list[float]) -> None:
        e = self.e
        args = e.alloca(self.args_struct.size)
        s = self.args_struct
        in_arr = self.tensor_refs(inputs)
        out_arr = self.tensor_refs(outputs)
        ints = e.alloca(8 * len(int_vals))
        for k, v in enumerate(int_vals):
            e.store(e.const(int(v)), e.gep(ints, 8 * k))
        floats = e.alloca(8 * len(float_vals))
        for k, v in enumerate(float_vals):
            e.store(e.const_f64(v), e.gep(floats, 8 * k))
        self.store_field(s, args, "struct_size", e.const(s.size))
        self.store_field(s, args, "inputs", in_arr)
        self.store_field(s, args, "outputs", out_arr)
        self.store_field(s, args, "int_attrs", ints if int_vals else e.null())
        self.store_field(s, args, "float_attrs", floats if float_vals else e.null())
        self.store_field(s, args, "n_inputs", e.const(len(inputs), "i32"))
        self.store_field(s, args, "n_outputs", e.const(len(outputs), "i32"))
        self.store_field(s, args, "n_int_attrs", e.const(len(int_vals), "i32"))
        self.store_field(s, args, "n_float_attrs", e.const(len(float_vals), "i32"))
        self.call(kernel, [self.state, args])

    def finish(self, ret: ir.Operation) -> LoweredProgram:
        self.e.finish()
        # the declarations of the runtime functions called, in first-use order, ahead of the globals
        first = self.out.body.operations[0]
        for name, fn in self.imports.items():
            llvm.LLVMFuncOp(name, ir.TypeAttr.get(function_type(fn.params_llvm, fn.returns_llvm)),
                            ip=ir.InsertionPoint(first))
        try:
            self.out.operation.verify()
        except ir.MLIRError as exc:
            raise RuntimeError(f"internal error: the generated host program does not verify: {exc}") from exc
        fold_shape_arithmetic(self.out)
        return LoweredProgram(
            module=self.out, imports=list(self.imports), weights=self.weights, n_inputs=self.n_inputs,
            pool_size=self.pool_size, host_scratch_slots=self.slots,
            output_dims=[[sym.to_str(d) for d in hir.dims_of(v)] for v in ret.operands],
            min_minor=self.min_minor,
            checks=self.checks, kernel_nodes=self.kernel_nodes,
        )


# Upstream passes over the emitted program: fold the static shape arithmetic, share what is
# computed twice (a dim, a size, an offset, an overflow bit), then lower the arith ops to LLVM.
SHAPE_PIPELINE = "builtin.module(canonicalize, cse, convert-arith-to-llvm, canonicalize)"


def fold_shape_arithmetic(module: ir.Module) -> None:
    """Runs SHAPE_PIPELINE on the program (declarations, globals, the entry function), in place."""
    from torch_mlir.passmanager import PassManager

    with module.context:
        PassManager.parse(SHAPE_PIPELINE).run(module.operation)


def lower_to_llvm(module: ir.Module, abi: RuntimeAbi) -> LoweredProgram:
    """The host program for a planned module (after plan-memory)."""
    with hir.reading_shapes():
        return _Lowering(module, abi).run()


def add_metadata_global(module: ir.Module, json_text: str) -> ir.Operation:
    """Appends to the program the LLVM global that holds the metadata JSON (NUL-terminated) in the
    manifest's metadata section; returns it (compile_model erases it once the object is written)."""
    from ..artifact import SECTION

    data = json_text.encode() + b"\0"
    with module.context, ir.Location.unknown(), ir.InsertionPoint(module.body):
        return llvm.GlobalOp(llvm.ArrayType.get(llvm_type("i8"), len(data)), "__hipdnn_ep_meta",
                             linkage("external"), constant=True,
                             value=ir.StringAttr.get(data), section=SECTION, addr_space=0).operation
