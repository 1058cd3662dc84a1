"""Lowering of the planned hipdnn IR to an LLVM-dialect host program calling the runtime ABI."""

from .to_llvm import LoweredProgram, lower_to_llvm

__all__ = ["lower_to_llvm", "LoweredProgram"]
