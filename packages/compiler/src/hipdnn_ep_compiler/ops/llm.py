"""The ops of onnxruntime-genai's LLM graphs: MatMulNBits, SkipSimplifiedLayerNormalization,
RotaryEmbedding and GroupQueryAttention (com.microsoft) and SimplifiedLayerNormalization (which ONNX
Runtime registers in the default domain only).

Their kernels take optional inputs by position: the kernel-level ops carry `hipdnn.slots`, each
operand's kernel input position, and the lowering passes the positions left out as absent tensors
(`arity` counts the operands given).
`same_type` lists kernel input positions here. GroupQueryAttention and the skip-sum form of
SkipSimplifiedLayerNormalization have several results, each with its own buffer.
"""

from __future__ import annotations

from torch_mlir import ir

from .. import checks
from .. import ir as hir
from .. import symbolic as sym
from ..errors import ModelError
from .node import Node, norm_axis, replace, show
from .registry import Kernel, OpDef, register, register_kernel

MS = "com.microsoft"

RMS_NORM = register_kernel(Kernel("rms_norm", "kernel_rms_norm", ("axis",), ("epsilon",), arity=(2, 4),
                                  results=(1, 2), same_type=(0, 1, 2, 3)))
MATMUL_NBITS = register_kernel(Kernel("matmul_nbits", "kernel_matmul_nbits", ("K", "N", "bits", "block_size"),
                                      arity=(3, 5), same_type=(0, 2, 4)))
ROTARY = register_kernel(Kernel("rotary_embedding", "kernel_rotary_embedding",
                                ("interleaved", "num_heads", "rotary_embedding_dim"), arity=(4, 4),
                                same_type=(0, 2, 3)))
GQA = register_kernel(Kernel("group_query_attention", "kernel_group_query_attention",
                             ("num_heads", "kv_num_heads", "local_window_size", "do_rotary", "rotary_interleaved"),
                             ("scale", "softcap"), arity=(3, 9), results=(3, 3), same_type=(0, 1, 2, 3, 4, 7, 8)))


def _present(o: Node, allowed: list[int]) -> tuple[list[ir.Value], list[int]]:
    """The inputs given among the `allowed` ONNX positions (any other is refused) and their positions."""
    extra = sorted(set(o.inputs) - set(allowed))
    if extra:
        o.fail(f"input {extra[0]} is not supported")
    positions = sorted(o.inputs)
    return [o.inputs[i] for i in positions], positions


def _rms_norm(o: Node) -> None:
    d = o.dims(0)
    if not d:
        raise ModelError(f"{o.where}: the input must have rank >= 1")
    skip = o.kind == "skip_rms_norm"
    axis = len(d) - 1 if skip else norm_axis(o, o.attr_int("axis", -1), len(d))
    # kernel inputs X, Scale, Skip, Bias; ONNX: X, Scale (Simplified) or X, Skip, Gamma, Bias (Skip...)
    to_slot = {0: 0, 1: 2, 2: 1, 3: 3} if skip else {0: 0, 1: 1}
    operands, positions = _present(o, list(to_slot))
    by_slot = sorted(zip((to_slot[p] for p in positions), operands, strict=True), key=lambda t: t[0])
    text = checks.Text(1, sym.product(d[axis:]))
    o.require("le", text.values, f"input shape {text.dims(d)} has {{1}} elements from axis {axis} on; "
                                 "RMS normalization needs at least 1")
    replace(o, RMS_NORM, [v for _, v in by_slot],
            {"axis": axis, "epsilon": o.attr_float("epsilon", 1e-5), "hipdnn.slots": [k for k, _ in by_slot]},
            [d] * len(o.op.results))


register(OpDef("SimplifiedLayerNormalization", "rms_norm", _rms_norm, (RMS_NORM,)))  # ORT: default domain only
register(OpDef("SkipSimplifiedLayerNormalization", "skip_rms_norm", _rms_norm, (RMS_NORM,), domains=(MS,)))


def _matmul_nbits(o: Node) -> None:
    a = o.dims(0)
    k, n = o.attr_int("K"), o.attr_int("N")
    bits, block = o.attr_int("bits", 4), o.attr_int("block_size")
    if bits != 4:
        o.fail(f"bits={bits} is not supported (only 4)")
    if k is None or n is None or block is None:
        raise ModelError(f"{o.where}: MatMulNBits needs the K, N and block_size attributes")
    if block < 16 or block & (block - 1):
        raise ModelError(f"{o.where}: block_size {block} must be a power of two >= 16")
    if not a or a[-1] != k:
        raise ModelError(f"{o.where}: input A has shape {show(a)}; its last dim must be K = {k}")
    if o.input(4) is not None:
        o.fail("g_idx (input 4) is not supported")
    if o.input(3) is not None and hir.element_dtype(o.input(3)) != 2:
        o.fail("zero points must be packed UINT8 (zero points of the scales' element type are not supported)")
    blocks = -(-k // block)
    for i, what, count in ((1, "B", n * blocks * (block // 2)), (2, "scales", n * blocks),
                           (3, "zero points", n * ((blocks + 1) // 2)), (5, "bias", n)):
        if o.input(i) is not None and sym.product(o.dims(i)) != count:
            raise ModelError(f"{o.where}: {what} has shape {show(o.dims(i))}; it must hold {count} values")
    operands, positions = _present(o, [0, 1, 2, 3, 5])
    slots = [4 if p == 5 else p for p in positions]  # bias is the kernel's input 4 (no g_idx)
    replace(o, MATMUL_NBITS, operands, {"K": k, "N": n, "bits": bits, "block_size": block, "hipdnn.slots": slots},
            [a[:-1] + [n]])


register(OpDef("MatMulNBits", "matmul_nbits", _matmul_nbits, (MATMUL_NBITS,), domains=(MS,)))


def _rotary_embedding(o: Node) -> None:
    d = o.dims(0)
    if len(d) not in (3, 4):
        o.fail(f"input of rank {len(d)} is not supported (3 or 4)")
    if o.attr_int("is_packed_batching", 0):
        o.fail("is_packed_batching is not supported")
    operands, positions = _present(o, [0, 1, 2, 3])
    if positions != [0, 1, 2, 3]:
        raise ModelError(f"{o.where}: RotaryEmbedding needs input, position_ids, cos_cache and sin_cache")
    replace(o, ROTARY, operands,
            {"interleaved": o.attr_int("interleaved", 0), "num_heads": o.attr_int("num_heads", 0),
             "rotary_embedding_dim": o.attr_int("rotary_embedding_dim", 0), "hipdnn.slots": positions}, [d])


register(OpDef("RotaryEmbedding", "rotary_embedding", _rotary_embedding, (ROTARY,), domains=(MS,)))


def _group_query_attention(o: Node) -> None:
    # ONNX Runtime hands unset attributes to an EP with the schema's default (-1 for smooth_softmax):
    # anything not positive is off
    for name in ("smooth_softmax", "qk_output", "kv_cache_bit_width"):
        if o.attr_int(name, 0) > 0:
            o.fail(f"{name}={o.attr_int(name, 0)} is not supported")
    if hir.get_str(o.op, "onnx.k_quant_type", "NONE") not in ("NONE", ""):
        o.fail("quantized KV caches are not supported")
    roles = hir.get_ints(o.op, "result_roles", list(range(len(o.op.results))))
    if roles[:3] != [0, 1, 2]:
        o.fail("the present_key and present_value outputs are required")
    if len(roles) > 3:
        o.fail("only the output, present_key and present_value outputs are supported")
    heads, kv_heads = o.attr_int("num_heads"), o.attr_int("kv_num_heads")
    if not heads or not kv_heads or heads <= 0 or kv_heads <= 0 or heads % kv_heads:
        raise ModelError(f"{o.where}: num_heads {heads} must be a positive multiple of kv_num_heads {kv_heads}")
    operands, positions = _present(o, list(range(9)))
    q = o.dims(0)
    if len(q) != 3:
        raise ModelError(f"{o.where}: query has shape {show(q)}; it must be [batch, sequence, hidden]")
    packed = o.input(1) is None
    if packed != (o.input(2) is None):
        raise ModelError(f"{o.where}: key and value must be both given or both absent (packed QKV)")
    if not isinstance(q[2], int):
        o.fail(f"the query's hidden size must be static, not {sym.to_str(q[2])}")
    per_token = heads + 2 * kv_heads if packed else heads
    if q[2] % per_token:
        raise ModelError(f"{o.where}: query hidden size {q[2]} is not a multiple of {per_token} heads")
    head_size = q[2] // per_token
    if (o.input(3) is None) != (o.input(4) is None):
        raise ModelError(f"{o.where}: past_key and past_value must be both given or both absent")
    for i in (5, 6):
        if o.input(i) is None:
            raise ModelError(f"{o.where}: input {i} ({'seqlens_k' if i == 5 else 'total_sequence_length'}) "
                             "is required")
    do_rotary = o.attr_int("do_rotary", 0)
    if do_rotary and (o.input(7) is None or o.input(8) is None):
        raise ModelError(f"{o.where}: do_rotary needs cos_cache and sin_cache")
    total = o.host(6)
    if total is None or len(total) != 1:
        o.fail("total_sequence_length must be computable on the host (from input shapes, constants or a small "
               "graph input)")
    total = total[0]
    batch, seq = q[0], q[1]
    present = sym.maximum(o.dims(3)[2], total) if o.input(3) is not None else total
    t = checks.Text(seq, total)
    o.require("le", t.values, "total_sequence_length {1} is smaller than the query's sequence length {0}")
    kv = [batch, kv_heads, present, head_size]
    replace(o, GQA, operands,
            {"num_heads": heads, "kv_num_heads": kv_heads, "local_window_size": o.attr_int("local_window_size", -1),
             "do_rotary": do_rotary, "rotary_interleaved": o.attr_int("rotary_interleaved", 0),
             "scale": o.attr_float("scale", 0.0), "softcap": o.attr_float("softcap", 0.0), "hipdnn.slots": positions},
            [[batch, seq, heads * head_size], kv, kv])


register(OpDef("GroupQueryAttention", "group_query_attention", _group_query_attention, (GQA,), domains=(MS,)))
