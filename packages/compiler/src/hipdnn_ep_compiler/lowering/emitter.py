"""A small builder of LLVM-dialect text for one function: SSA names, blocks, constants, calls.

The lowering produces textual LLVM dialect and parses it with the MLIR bindings (which verify
it); keeping the builder this thin keeps the lowering readable.
"""

from __future__ import annotations

import struct


def llvm_type(t: str) -> str:
    return "!llvm.ptr" if t == "ptr" else t


def f64_literal(x: float) -> str:
    return f"{struct.unpack('<Q', struct.pack('<d', float(x)))[0]:#018x}"


class FunctionEmitter:
    def __init__(self) -> None:
        self.entry: list[str] = []  # allocas and constants, hoisted into the entry block
        self.lines: list[str] = []
        self.counter = 0
        self.block_counter = 0
        self.consts: dict[tuple[str, object], str] = {}

    def fresh(self) -> str:
        self.counter += 1
        return f"%t{self.counter}"

    def emit(self, text: str) -> str:
        name = self.fresh()
        self.lines.append(f"{name} = {text}")
        return name

    def const(self, value: int, ty: str = "i64") -> str:
        key = (ty, value)
        if key not in self.consts:
            name = self.fresh()
            self.entry.append(f"{name} = llvm.mlir.constant({value} : {ty}) : {ty}")
            self.consts[key] = name
        return self.consts[key]

    def const_f64(self, value: float) -> str:
        key = ("f64", f64_literal(value))
        if key not in self.consts:
            name = self.fresh()
            self.entry.append(f"{name} = llvm.mlir.constant({f64_literal(value)} : f64) : f64")
            self.consts[key] = name
        return self.consts[key]

    def null(self) -> str:
        key = ("ptr", None)
        if key not in self.consts:
            name = self.fresh()
            self.entry.append(f"{name} = llvm.mlir.zero : !llvm.ptr")
            self.consts[key] = name
        return self.consts[key]

    def addressof(self, symbol: str) -> str:
        key = ("addr", symbol)
        if key not in self.consts:
            name = self.fresh()
            self.entry.append(f"{name} = llvm.mlir.addressof @{symbol} : !llvm.ptr")
            self.consts[key] = name
        return self.consts[key]

    def alloca(self, nbytes: int) -> str:
        name = self.fresh()
        self.entry.append(
            f"{name} = llvm.alloca {self.const(max(nbytes, 8))} x i8 {{alignment = 16 : i64}} : (i64) -> !llvm.ptr")
        return name

    def gep(self, ptr: str, offset: int | str) -> str:
        if isinstance(offset, int):
            if offset == 0:
                return ptr
            return self.emit(f"llvm.getelementptr {ptr}[{offset}] : (!llvm.ptr) -> !llvm.ptr, i8")
        return self.emit(f"llvm.getelementptr {ptr}[{offset}] : (!llvm.ptr, i64) -> !llvm.ptr, i8")

    def load(self, ptr: str, ty: str) -> str:
        return self.emit(f"llvm.load {ptr} : !llvm.ptr -> {llvm_type(ty)}")

    def store(self, value: str, ptr: str, ty: str) -> None:
        self.lines.append(f"llvm.store {value}, {ptr} : {llvm_type(ty)}, !llvm.ptr")

    def binop(self, op: str, a: str, b: str, ty: str = "i64") -> str:
        return self.emit(f"llvm.{op} {a}, {b} : {ty}")

    def icmp(self, pred: str, a: str, b: str, ty: str = "i64") -> str:
        return self.emit(f'llvm.icmp "{pred}" {a}, {b} : {ty}')

    def select(self, cond: str, a: str, b: str, ty: str = "i64") -> str:
        return self.emit(f"llvm.select {cond}, {a}, {b} : i1, {ty}")

    def sext(self, value: str, frm: str) -> str:
        return self.emit(f"llvm.sext {value} : {frm} to i64")

    def trunc(self, value: str, to: str) -> str:
        return self.emit(f"llvm.trunc {value} : i64 to {to}")

    def call(self, fn: str, args: list[str], params: tuple[str, ...], returns: str) -> str | None:
        sig = f"({', '.join(llvm_type(p) for p in params)})"
        if returns == "void":
            self.lines.append(f"llvm.call @{fn}({', '.join(args)}) : {sig} -> ()")
            return None
        return self.emit(f"llvm.call @{fn}({', '.join(args)}) : {sig} -> {llvm_type(returns)}")

    def branch_unless(self, ok: str, fail_block: str, status: str) -> None:
        """Continue in a new block when `ok` (i1) holds, else jump to the failure block with status."""
        self.block_counter += 1
        nxt = f"^bb{self.block_counter}"
        self.lines.append(f"llvm.cond_br {ok}, {nxt}, {fail_block}({status} : i32)")
        self.lines.append(f"{nxt}:")

    def text(self) -> str:
        return "\n".join(["  " + line if not line.startswith("^") else line for line in self.entry + self.lines])
