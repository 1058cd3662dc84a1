"""The runtime functions and kernels the host program may call, by manifest name.

Only names live here (as the manifest's prefix + suffix); every signature, struct layout and
enum value is read from the manifest JSON.  `validate` runs at import against the bundled
manifest so a renamed kernel or attribute fails loudly at once, not in a user's compile.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import dtypes
from ..abi import RuntimeAbi, load_abi

MALLOC = "malloc"
FREE = "free"
MEMCPY = "memcpy"
HOST_SCRATCH = "get_host_scratch_base"
POOL = "get_pool_base"
SERVICE_CALLS = (MALLOC, FREE, MEMCPY, HOST_SCRATCH, POOL)
# Called only when the target ABI has it (1.2+); older targets get the same program without it.
SET_ERROR_MESSAGE = "set_error_message"

TENSOR_REF = "tensor_ref_t"
KERNEL_ARGS = "kernel_args_t"


@dataclass(frozen=True)
class KernelEntry:
    """How one canonical IR op calls its kernel: the kernel suffix and the attribute names it sets."""

    kernel: str
    int_attrs: tuple[str, ...] = ()
    float_attrs: tuple[str, ...] = ()
    op_enum: str | None = None  # the enum whose value the int attribute "op" takes
    # Kernel inputs the lowering appends from attributes (axes, perm, starts, steps), always int64.
    param_inputs: tuple[int, ...] = ()


KERNELS: dict[str, KernelEntry] = {
    "hipdnn.binary": KernelEntry("kernel_binary", ("op",), op_enum="binary_op"),
    "hipdnn.unary": KernelEntry("kernel_unary", ("op",), op_enum="unary_op"),
    "hipdnn.cast": KernelEntry("kernel_cast"),
    "hipdnn.where": KernelEntry("kernel_where"),
    "hipdnn.matmul": KernelEntry("kernel_matmul"),
    "hipdnn.gemm": KernelEntry("kernel_gemm", ("trans_a", "trans_b"), ("alpha", "beta")),
    "hipdnn.softmax": KernelEntry("kernel_softmax", ("axis",)),
    "hipdnn.layer_norm": KernelEntry("kernel_layer_norm", ("axis",), ("epsilon",)),
    "hipdnn.reduce": KernelEntry("kernel_reduce", ("op",), op_enum="reduce_op", param_inputs=(1,)),
    "hipdnn.transpose": KernelEntry("kernel_transpose", param_inputs=(1,)),
    "hipdnn.concat": KernelEntry("kernel_concat", ("axis",)),
    "hipdnn.slice": KernelEntry("kernel_slice", param_inputs=(1, 2)),
    "hipdnn.gather": KernelEntry("kernel_gather", ("axis",)),
    "hipdnn.expand": KernelEntry("kernel_expand"),
}


def validate(abi: RuntimeAbi) -> list[str]:
    """Problems between this table and a manifest (empty when they agree)."""
    problems = []
    for suffix in SERVICE_CALLS:
        if abi.name(suffix) not in abi.functions:
            problems.append(f"function {abi.name(suffix)} is missing")
    for op, entry in KERNELS.items():
        fn = abi.functions.get(abi.name(entry.kernel))
        if fn is None:
            problems.append(f"{op}: kernel {abi.name(entry.kernel)} is missing")
            continue
        if fn.int_attrs != entry.int_attrs or fn.float_attrs != entry.float_attrs:
            problems.append(f"{op}: kernel {fn.name} has attributes {fn.int_attrs}/{fn.float_attrs}, "
                            f"the compiler sets {entry.int_attrs}/{entry.float_attrs}")
        if entry.op_enum and abi.name(entry.op_enum) not in abi.enums:
            problems.append(f"{op}: enum {abi.name(entry.op_enum)} is missing")
        for i in entry.param_inputs:
            allowed = fn.later_input_dtypes().get(i)
            if allowed is not None and dtypes.INT64 not in allowed:
                problems.append(f"{op}: kernel {fn.name} input {i} does not accept the int64 the lowering passes")
    for struct in (TENSOR_REF, KERNEL_ARGS):
        if abi.name(struct) not in abi.structs:
            problems.append(f"struct {abi.name(struct)} is missing")
    return problems


_problems = validate(load_abi())
if _problems:
    raise ImportError("hipdnn-ep-compiler's kernel table disagrees with its bundled ABI manifest: "
                      + "; ".join(_problems))
