"""A numpy reference of the runtime ABI, for running artifacts in the compiler's own tests.

The compiler wheel must not need the runtime wheel, yet its tests should execute what it
emits.  This builds, from the manifest JSON, a shared library with the runtime's SONAME and
symbol versions whose every function forwards to a Python dispatcher; the kernels are numpy
one-liners following the manifest's documented semantics.  It is a test oracle for the host
programs (dims, offsets, attributes, statuses), not a runtime.

The kernels are mixins by family (general.py, quant.py, llm.py, vision.py) over the ABI's memory,
tensor and program entry points (base.py); shim.py builds the forwarding library. The Resize and
GridSample references are shared with the runtime's kernel tests (packages/abi/reference/kernel_reference.py).
"""

from __future__ import annotations

from .base import RuntimeBase
from .general import GeneralKernels
from .llm import LlmKernels
from .quant import QuantKernels
from .shim import CODE, NP, build_shim
from .vision import VisionKernels, conv_transpose_ref

__all__ = ["CODE", "NP", "RefRuntime", "build_shim", "conv_transpose_ref"]


class RefRuntime(GeneralKernels, QuantKernels, LlmKernels, VisionKernels, RuntimeBase):
    """The numpy reference runtime: every ABI function the manifest lists, as fn_<name> of a family."""
