"""The host program's shape code: the IR's `index` values lowered to checked i64 arithmetic, and the
checks over them (a mixin of to_llvm's lowering, which holds the emitter, the program's inputs and the
runtime calls it uses).

Each index value is lowered once, at its first use on the program's main path, its operands first
(`index`): `tensor.dim %argN` loads the input's dim, `arith.index_cast (tensor.extract %argN[..])` the
element copied from the host-read input, and arith ops become the same ops over i64, with add, sub, mul
and ceildiv checked for int64 overflow (a flag, tested before the next runtime call or check:
`guard_overflow`), division safe for 0 and INT64_MIN / -1.  A check that fails tells the runtime which,
with its values, computed in a block of their own (`explain_unless`).
"""

from __future__ import annotations

from dataclasses import dataclass

from torch_mlir import ir

from .. import checks as chk
from .. import ir as hir
from . import runtime_calls as rc

INT64_MIN = -(2 ** 63)
_LEAVES = frozenset(("arith.constant", "tensor.dim", "arith.index_cast"))  # read no lowered operands
_CHECKED = {"arith.addi": "add", "arith.subi": "sub", "arith.muli": "mul"}
_PREDICATES = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")  # arith.cmpi's, by value


@dataclass(frozen=True)
class ByteSize:
    """The byte size of a tensor value, an operand of the "fits" check of an output's size."""

    tensor: ir.Value


_NOT_CONSTANT = object()


def constant_of(value: ir.Value, default=_NOT_CONSTANT) -> int | None:
    """The integer of an arith.constant index value (a dim's axis, an element's position, a static
    entry of an array)."""
    op = hir.defining_op(value)
    if op is not None and op.name == "arith.constant":
        return ir.IntegerAttr(op.attributes["value"]).value
    if default is _NOT_CONSTANT:
        raise ValueError(f"internal error: {value} is not a constant")
    return default


class ShapeCode:
    """Shape values and checks of the program being emitted. The host class provides: `e` (the
    FunctionEmitter), `lowered` / `side` (the caches), `poison` (the overflow flag), `module`,
    `dims_ptr` and `input_values` (the program's inputs), `abi`, `fail`, `state`, and `call`,
    `can_call`, `enum_value` and `string`."""

    def _get(self, key) -> ir.Value | None:
        if self.side is not None and key in self.side:
            return self.side[key]
        return self.lowered.get(key)

    def _put(self, key, v: ir.Value) -> ir.Value:
        (self.lowered if self.side is None else self.side)[key] = v
        return v

    def index(self, root: ir.Value) -> ir.Value:
        """The i64 (for a comparison, i1) value of an index value of the IR, computed on first use, its
        operands first (iteratively: a chain of arith as long as the graph is deep needs no recursion),
        each op once: canonicalize and cse have shared what the IR computes twice, so computing each op
        once shares it in the program too."""
        v = self._get(root)
        if v is not None:
            return v
        stack = [root]
        while stack:
            top = stack[-1]
            if self._get(top) is not None:
                stack.pop()
                continue
            op = hir.defining_op(top)
            if op is None:
                raise ValueError(f"internal error: a block argument of type {top.type} in a shape computation")
            if op.name not in _LEAVES:
                missing = [x for x in op.operands if self._get(x) is None]
                if missing:
                    stack.extend(missing)
                    continue
            stack.pop()
            self._put(top, self._lower_index_op(op))
        return self._get(root)

    def _lower_index_op(self, op: ir.Operation) -> ir.Value:
        """One op of the shape computation, its operands lowered already; the arithmetic is checked
        (symbolic.evaluate_int64 is the same arithmetic): a wrapping add, sub, mul or ceildiv and
        INT64_MIN / -1 set the overflow flag, a division by 0 gives 0."""
        e, name = self.e, op.name
        if name == "arith.constant":
            value = ir.IntegerAttr(op.attributes["value"]).value
            if str(op.results[0].type) == "i1":
                return e.const(value & 1, "i1")
            return e.const(value)
        if name == "tensor.dim":
            return self.input_dim(ir.BlockArgument(op.operands[0]).arg_number, constant_of(op.operands[1]))
        if name == "arith.index_cast":
            ext = hir.defining_op(op.operands[0])
            if ext is None or ext.name != "tensor.extract":
                raise ValueError(f"internal error: {op} is not a host-read input element")
            k = constant_of(ext.operands[1]) if len(ext.operands) > 1 else 0
            return self.input_value(ir.BlockArgument(ext.operands[0]).arg_number, k)
        a = [self._get(x) for x in op.operands]
        if name in _CHECKED:
            return self.checked(_CHECKED[name], *a)
        if name == "arith.divsi":
            return self.div(*a)
        if name == "arith.ceildivsi":
            return self.div(self.checked("add", a[0], self.checked("add", a[1], e.const(-1))), a[1])
        if name in ("arith.maxsi", "arith.minsi"):
            return e.arith("MaxSIOp" if name == "arith.maxsi" else "MinSIOp", *a)
        if name == "arith.cmpi":
            return e.cmpi(_PREDICATES[ir.IntegerAttr(op.attributes["predicate"]).value], *a)
        if name == "arith.select":
            return e.select(*a)
        raise ValueError(f"internal error: {name} is not a shape computation the lowering knows")

    def input_dim(self, i: int, k: int) -> ir.Value:
        """dims[k] of program input i, loaded once."""
        key = ("dim", i, k)
        v = self._get(key)
        if v is None:
            dims = self.dims_ptr[hir.body(self.module).arguments[i]]
            v = self._put(key, self.e.load(self.e.gep(dims, 8 * k), "i64"))
        return v

    def input_value(self, i: int, k: int) -> ir.Value:
        """Element k of program input i, read on the host (copied to the host scratch on entry), loaded once."""
        key = ("value", i, k)
        v = self._get(key)
        if v is None:
            base, elem = self.input_values[i]
            v = self.e.load(self.e.gep(base, k * (8 if elem == "i64" else 4)), elem)
            v = self._put(key, v if elem == "i64" else self.e.extsi(v))
        return v

    def dims(self, value: ir.Value) -> list[int | ir.Value | tuple[int, int]]:
        """The dims of a tensor value (as hir.dims_of reads them): the index values of its hipdnn.tie_dims
        when it has one, else its static type's, (input, axis) for a program input's dynamic dim."""
        shape = ir.RankedTensorType(value.type).shape
        if hir.is_block_arg(value):
            i = ir.BlockArgument(value).arg_number
            return [d if not ir.ShapedType.is_dynamic_size(d) else (i, k) for k, d in enumerate(shape)]
        tied = hir.tied_dims(value)
        if tied is not None:  # (a run-time permutation's result keeps its input's type: the tie rules)
            return tied
        if any(ir.ShapedType.is_dynamic_size(d) for d in shape):
            raise ValueError(f"internal error: {value.type} has dynamic dims and no hipdnn.tie_dims")
        return list(shape)

    def value(self, x) -> ir.Value:
        """The i64 value of an int, an index value of the IR, an input dim (input, axis) or a ByteSize."""
        if isinstance(x, int):
            return self.e.const(x)
        if isinstance(x, tuple):
            return self.input_dim(*x)
        if isinstance(x, ByteSize):
            return self.byte_size(x.tensor)
        return self.index(x)

    def byte_size(self, value: ir.Value) -> ir.Value:
        """The element size times the dims (a checked product: the static ones folded, then the others in
        order), computed once per distinct set of dims."""
        const, factors = hir.DTYPES[hir.element_dtype(value)][1], []
        for d in self.dims(value):
            c = d if isinstance(d, int) else None if isinstance(d, tuple) else constant_of(d, None)
            if c is not None:
                const *= c
            else:
                factors.append(self.value(d))
        if const == 0 or not factors:
            return self.e.const(const)
        key = ("bytes", const, tuple(factors))
        v = self._get(key)
        if v is None:
            v = factors[0] if const == 1 else self.checked("mul", self.e.const(const), factors[0])
            for f in factors[1:]:
                v = self.checked("mul", v, f)
            self._put(key, v)
        return v

    def flag_overflow(self, bit: ir.Value) -> None:
        self.poison = bit if self.poison is None else self.e.arith("OrIOp", self.poison, bit)

    def checked(self, op: str, a: ir.Value, b: ir.Value) -> ir.Value:
        """a + b, a - b or a * b; a wrap sets the overflow flag.

        arith has no overflow-reporting add or mul (its nsw flag is a promise, not a check), so the
        wrap is detected with arith ops that canonicalize folds away when both operands are constants:
        a sum wrapped when its sign differs from both operands' signs, a difference when a's sign
        differs from b's and from the result's, a product when the high half of the 128-bit product is
        not the sign extension of the low half."""
        e = self.e
        if op == "add":
            r = e.arith("AddIOp", a, b)
            both = e.arith("AndIOp", e.arith("XOrIOp", a, r), e.arith("XOrIOp", b, r))
            self.flag_overflow(e.cmpi("slt", both, e.const(0)))
            return r
        if op == "sub":
            r = e.arith("SubIOp", a, b)
            both = e.arith("AndIOp", e.arith("XOrIOp", a, b), e.arith("XOrIOp", a, r))
            self.flag_overflow(e.cmpi("slt", both, e.const(0)))
            return r
        low, high = e.mulsi_extended(a, b)
        self.flag_overflow(e.cmpi("ne", high, e.arith("ShRSIOp", low, e.const(63))))
        return low

    def div(self, a: ir.Value, b: ir.Value) -> ir.Value:
        """a / b truncated; 0 when b is 0; INT64_MIN / -1 sets the overflow flag (never a trap)."""
        e = self.e
        zero = e.cmpi("eq", b, e.const(0))
        wraps = e.arith("AndIOp", e.cmpi("eq", a, e.const(INT64_MIN)), e.cmpi("eq", b, e.const(-1)))
        self.flag_overflow(wraps)
        safe = e.select(e.arith("OrIOp", zero, wraps), e.const(1), b)
        return e.select(zero, e.const(0), e.arith("DivSIOp", a, safe))

    def guard_overflow(self) -> None:
        """Return INVALID_ARGUMENT if shape arithmetic computed so far overflowed int64."""
        if self.poison is not None:
            bit, self.poison = self.poison, None
            invalid = self.e.const(self.enum_value(self.abi.name("status"), "INVALID_ARGUMENT"), "i32")
            self.e.branch_unless(self.e.icmp("eq", bit, self.e.const(0, "i1")), self.fail, invalid)

    def emit_check(self, check: chk.Check, operands: list) -> None:
        """The check's relation over its operands' values (index values of the IR, or ByteSize)."""
        e = self.e
        v = [self.value(x) for x in operands[:chk.ARITY[check.kind]]]
        if check.kind == "eq":
            ok = e.icmp("eq", v[0], v[1])
        elif check.kind == "le":
            ok = e.icmp("sle", v[0], v[1])
        elif check.kind == "nonneg":
            ok = e.icmp("sge", v[0], e.const(0))
        else:  # fits: evaluating it is the check
            ok = e.const(1, "i1")
        self.guard_overflow()
        invalid = e.const(self.enum_value(self.abi.name("status"), "INVALID_ARGUMENT"), "i32")
        if check.kind != "fits" and self.can_call(rc.SET_ERROR_MESSAGE):
            self.explain_unless(ok, check, operands, invalid)
        else:  # ABI 1.1: the runtime re-derives the failing check from the metadata
            e.branch_unless(ok, self.fail, invalid)

    def explain_unless(self, ok: ir.Value, check: chk.Check, operands: list, status: ir.Value) -> None:
        """Continue when `ok` holds; else tell the runtime which check failed, with its values, and fail."""
        e = self.e
        explain, nxt = e.new_block(self.fail), e.new_block(self.fail)
        e.cond_br(ok, nxt, explain)
        e.set_block(explain)
        # values only shown are computed here, without touching the overflow flag, and what is computed
        # here only is not reused by the main path (this block does not dominate it)
        poison, self.side = self.poison, {}
        values = [self.value(x) for x in operands]
        self.side, self.poison = None, poison
        array = e.alloca(8 * max(len(values), 1))
        for k, v in enumerate(values):
            e.store(v, e.gep(array, 8 * k))
        where = check.where.replace("{", "{{").replace("}", "}}")
        self.call(rc.SET_ERROR_MESSAGE, [self.state, self.string(f"{where}: {check.text}"), array,
                                         e.const(len(values), "i32")], check=False)
        e.br(self.fail, [status])
        e.set_block(nxt)
