"""ONNX's bitwise ops: BitwiseAnd, BitwiseOr, BitwiseXor, BitwiseNot and BitShift.

All are values of the existing binary and unary kernels' enums (ABI 1.3: BITWISE_AND, BITWISE_OR,
BITWISE_XOR, SHIFT_LEFT, SHIFT_RIGHT, BITWISE_NOT) on the integer element types the ABI has (uint8,
int8, int32, int64); the manifest's dtype tables say so, and check-dtypes refuses the rest naming the
node.  BitShift follows opset 28: an amount below 0 or at least the type's width shifts every bit out.
"""

from __future__ import annotations

from .. import ir as hir
from ..errors import ModelError
from .node import Node, broadcast, replace
from .onnx import BINARY, UNARY, _binary, _unary
from .registry import OpDef, register

for _op_type, _key in (("BitwiseAnd", "BITWISE_AND"), ("BitwiseOr", "BITWISE_OR"), ("BitwiseXor", "BITWISE_XOR")):
    register(OpDef(_op_type, _key.lower(), _binary, (BINARY,), enum_key=_key))

register(OpDef("BitwiseNot", "bitwise_not", _unary, (UNARY,), enum_key="BITWISE_NOT"))


def _bit_shift(o: Node) -> None:
    direction = hir.get_str(o.op, "onnx.direction", "")
    if direction not in ("LEFT", "RIGHT"):
        raise ModelError(f"{o.where}: direction is '{direction}'; it must be LEFT or RIGHT")
    replace(o, BINARY, [o.input(0), o.input(1)], {"op": "SHIFT_" + direction},
            [broadcast(o, o.dims(0), o.dims(1))])


register(OpDef("BitShift", "bit_shift", _bit_shift, (BINARY,)))
