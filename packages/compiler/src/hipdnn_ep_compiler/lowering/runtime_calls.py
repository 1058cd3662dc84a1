"""The runtime functions and kernels the host program may call, by manifest name.

Only names live here (as the manifest's prefix + suffix); every signature, struct layout and
enum value is read from the manifest JSON.  `validate` runs at import against the bundled
manifest so a renamed kernel or attribute fails loudly at once, not in a user's compile.
"""

from __future__ import annotations

from .. import dtypes
from ..abi import RuntimeAbi, load_abi
from ..ops import entries, kernels

MALLOC = "malloc"
FREE = "free"
MEMCPY = "memcpy"
HOST_SCRATCH = "get_host_scratch_base"
POOL = "get_pool_base"
SERVICE_CALLS = (MALLOC, FREE, MEMCPY, HOST_SCRATCH, POOL)
# Called only when the target ABI has it (1.2+); older targets get the same program without it.
SET_ERROR_MESSAGE = "set_error_message"
# Used instead of MALLOC for outputs when the target ABI has it (1.3+): the host may provide the memory.
OUTPUT_ALLOC = "output_alloc"

TENSOR_REF = "tensor_ref_t"
KERNEL_ARGS = "kernel_args_t"


def validate(abi: RuntimeAbi) -> list[str]:
    """Problems between the op registry's kernels and a manifest (empty when they agree)."""
    problems = []
    for suffix in SERVICE_CALLS:
        if abi.name(suffix) not in abi.functions:
            problems.append(f"function {abi.name(suffix)} is missing")
    for op, entry in kernels().items():
        fn = abi.functions.get(abi.name(entry.kernel))
        if fn is None:
            problems.append(f"{op}: kernel {abi.name(entry.kernel)} is missing")
            continue
        if fn.int_attrs != entry.int_attrs or fn.float_attrs != entry.float_attrs:
            problems.append(f"{op}: kernel {fn.name} has attributes {fn.int_attrs}/{fn.float_attrs}, "
                            f"the compiler sets {entry.int_attrs}/{entry.float_attrs}")
        if entry.op_enum and abi.name(entry.op_enum) not in abi.enums:
            problems.append(f"{op}: enum {abi.name(entry.op_enum)} is missing")
        for k, p in enumerate(entry.params):
            if p.input != k + entry.n_operands:
                problems.append(f"{op}: parameter {p.attr} is kernel input {p.input}, but the lowering appends it "
                                f"after the {entry.n_operands} operands as input {k + entry.n_operands}")
        for i in entry.param_inputs:
            allowed = fn.later_input_dtypes().get(i)
            if allowed is not None and dtypes.INT64 not in allowed:
                problems.append(f"{op}: kernel {fn.name} input {i} does not accept the int64 the lowering passes")
    for entry in entries():
        for k in entry.kernels:
            enum = abi.enums.get(abi.name(k.op_enum)) if k.op_enum else None
            if entry.enum_key and enum is not None and entry.enum_key not in enum:
                problems.append(f"{entry.op_type}: enum {abi.name(k.op_enum)} has no value {entry.enum_key}")
    for struct in (TENSOR_REF, KERNEL_ARGS):
        if abi.name(struct) not in abi.structs:
            problems.append(f"struct {abi.name(struct)} is missing")
    return problems


_problems = validate(load_abi())
if _problems:
    raise ImportError("hipdnn-ep-compiler's kernel table disagrees with its bundled ABI manifest: "
                      + "; ".join(_problems))
