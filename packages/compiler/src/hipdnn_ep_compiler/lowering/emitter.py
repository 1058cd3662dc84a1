"""A small builder of one LLVM-dialect function through the MLIR bindings: blocks, constants, calls.

Values are `ir.Value`s and ops are created by the `llvm` and `arith` dialects' builders at the
current insertion point; constants, addresses and allocas go to the entry block (each constant and
address once), so every block may use them.  The lowering (to_llvm.py) reads like the program it
writes; the module is verified when the lowering is done.
"""

from __future__ import annotations

import struct

from torch_mlir import ir
from torch_mlir.dialects import arith, llvm


def llvm_type(t: str) -> ir.Type:
    """The LLVM-dialect type of a manifest type name (i1, i8, i32, i64, f64, ptr), in the current context."""
    if t == "ptr":
        return llvm.PointerType.get()
    if t == "f64":
        return ir.F64Type.get()
    if t.startswith("i") and t[1:].isdigit():
        return ir.IntegerType.get_signless(int(t[1:]))
    raise ValueError(f"no LLVM type for the manifest type '{t}'")


def function_type(params: tuple[str, ...] | list[str], returns: str) -> ir.Type:
    """`!llvm.func<ret (params)>` of manifest type names ("void" returns nothing)."""
    # the bindings have no builder for !llvm.void
    result = ir.Type.parse("!llvm.void") if returns == "void" else llvm_type(returns)
    return llvm.FunctionType.get(result, [llvm_type(p) for p in params])


def linkage(kind: str) -> ir.Attribute:
    """`#llvm.linkage<kind>` (private, external): the bindings have no builder for this attribute."""
    return ir.Attribute.parse(f"#llvm.linkage<{kind}>")


def _f64_bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", float(x)))[0]


def _int_range(ty: ir.IntegerType) -> tuple[int, int]:
    w = ty.width
    return (0, 1) if w == 1 else (-(1 << (w - 1)), (1 << w) - 1)


class FunctionEmitter:
    """Builds the body of `func` (an llvm.func with no blocks yet) from its entry block on."""

    def __init__(self, func: llvm.LLVMFuncOp, arg_types: list[ir.Type]) -> None:
        self.func = func
        self.entry = func.body.blocks.append(*arg_types)
        # constants and allocas are inserted before this mark, the program after it; finish() drops it
        with ir.InsertionPoint(self.entry):
            self._mark = ir.Operation.create("builtin.unrealized_conversion_cast")
        self.ip = ir.InsertionPoint(self.entry)
        self.consts: dict[tuple[str, object], ir.Value] = {}
        self._ptr = llvm.PointerType.get()

    @property
    def args(self) -> list[ir.Value]:
        return list(self.entry.arguments)

    # ------------------------------------------------------------ entry block
    def _hoisted(self, key: tuple[str, object], build) -> ir.Value:
        if key not in self.consts:
            with ir.InsertionPoint(self._mark):
                self.consts[key] = build()
        return self.consts[key]

    def const(self, value: int, ty: str = "i64") -> ir.Value:
        t = llvm_type(ty)
        lo, hi = _int_range(ir.IntegerType(t))
        if not lo <= value <= hi:
            raise ValueError(f"internal error: constant {value} does not fit {ty}")
        return self._hoisted((ty, value), lambda: llvm.ConstantOp(t, ir.IntegerAttr.get(t, value)).result)

    def const_f64(self, value: float) -> ir.Value:
        return self._hoisted(("f64", _f64_bits(value)),
                             lambda: llvm.ConstantOp(ir.F64Type.get(), ir.FloatAttr.get_f64(value)).result)

    def null(self) -> ir.Value:
        return self._hoisted(("ptr", None), lambda: llvm.ZeroOp(self._ptr).result)

    def addressof(self, symbol: str) -> ir.Value:
        return self._hoisted(("addr", symbol), lambda: llvm.AddressOfOp(self._ptr, symbol).result)

    def alloca(self, nbytes: int) -> ir.Value:
        """A 16-byte aligned stack buffer of at least 8 bytes, allocated once on entry."""
        size = self.const(max(nbytes, 8))
        with ir.InsertionPoint(self._mark):
            return llvm.AllocaOp(self._ptr, size, ir.IntegerType.get_signless(8), alignment=16).result

    # ------------------------------------------------------------ the program, at the insertion point
    def gep(self, ptr: ir.Value, offset: int | ir.Value) -> ir.Value:
        """`ptr` + `offset` bytes."""
        i8 = ir.IntegerType.get_signless(8)
        none = llvm.GEPNoWrapFlags.none
        if isinstance(offset, int):
            if offset == 0:
                return ptr
            return llvm.GEPOp(self._ptr, ptr, [], [offset], i8, none, ip=self.ip).result
        dynamic = -(1 << 31)  # GEPOp's marker for "this index is the next dynamic operand"
        return llvm.GEPOp(self._ptr, ptr, [offset], [dynamic], i8, none, ip=self.ip).result

    def load(self, ptr: ir.Value, ty: str) -> ir.Value:
        return llvm.LoadOp(llvm_type(ty), ptr, ip=self.ip).result

    def store(self, value: ir.Value, ptr: ir.Value) -> None:
        llvm.StoreOp(value, ptr, ip=self.ip)

    def icmp(self, pred: str, a: ir.Value, b: ir.Value) -> ir.Value:
        return llvm.ICmpOp(getattr(llvm.ICmpPredicate, pred), a, b, ip=self.ip).result

    def trunc(self, value: ir.Value, to: str) -> ir.Value:
        return llvm.TruncOp(llvm_type(to), value, llvm.IntegerOverflowFlags.none, ip=self.ip).result

    def call(self, fn: str, args: list[ir.Value], returns: str) -> ir.Value | None:
        result = None if returns == "void" else llvm_type(returns)
        op = llvm.CallOp(result, args, [], [], callee=fn, ip=self.ip)
        return None if result is None else op.result

    # arith over i64/i1 shape values: canonicalize and cse fold and share them, convert-arith-to-llvm lowers them
    def arith(self, name: str, *operands: ir.Value) -> ir.Value:
        return getattr(arith, name)(*operands, ip=self.ip).result

    def cmpi(self, pred: str, a: ir.Value, b: ir.Value) -> ir.Value:
        return arith.CmpIOp(getattr(arith.CmpIPredicate, pred), a, b, ip=self.ip).result

    def select(self, cond: ir.Value, a: ir.Value, b: ir.Value) -> ir.Value:
        return arith.SelectOp(cond, a, b, ip=self.ip).result

    def extsi(self, value: ir.Value) -> ir.Value:
        return arith.ExtSIOp(ir.IntegerType.get_signless(64), value, ip=self.ip).result

    def mulsi_extended(self, a: ir.Value, b: ir.Value) -> tuple[ir.Value, ir.Value]:
        """The low and high halves of the 128-bit product."""
        op = arith.MulSIExtendedOp(a, b, ip=self.ip)
        return op.low, op.high

    # ------------------------------------------------------------ control flow
    def new_block(self, before: ir.Block, *arg_types: ir.Type) -> ir.Block:
        return before.create_before(*arg_types)

    def set_block(self, block: ir.Block) -> None:
        """Continue the program at the end of `block`."""
        self.ip = ir.InsertionPoint(block)

    def cond_br(self, cond: ir.Value, then: ir.Block, otherwise: ir.Block,
                otherwise_args: list[ir.Value] | None = None) -> None:
        llvm.CondBrOp(cond, [], otherwise_args or [], then, otherwise, ip=self.ip)

    def br(self, dest: ir.Block, args: list[ir.Value]) -> None:
        llvm.BrOp(args, dest, ip=self.ip)

    def ret(self, value: ir.Value) -> None:
        llvm.ReturnOp(arg=value, ip=self.ip)

    def branch_unless(self, ok: ir.Value, fail: ir.Block, status: ir.Value) -> None:
        """Continue in a new block when `ok` (i1) holds, else jump to `fail` with the status."""
        nxt = self.new_block(fail)
        self.cond_br(ok, nxt, fail, [status])
        self.set_block(nxt)

    def finish(self) -> None:
        self._mark.erase()
