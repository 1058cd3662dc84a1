"""The ops of onnxruntime-genai's LLM graphs: MatMulNBits, SkipSimplifiedLayerNormalization,
RotaryEmbedding and GroupQueryAttention (com.microsoft) and SimplifiedLayerNormalization (which ONNX
Runtime registers in the default domain only); and a gated MLP's gate and up MatMulNBits with SiLU(gate) * up,
which fuse-gated-matmul-nbits makes one op.

Their kernels take optional inputs by position: the kernel-level ops carry `hipdnn.slots`, each
operand's kernel input position, and the lowering passes the positions left out as absent tensors
(`arity` counts the operands given).
`same_type` lists kernel input positions here. GroupQueryAttention and the skip-sum form of
SkipSimplifiedLayerNormalization have several results, each with its own buffer.
"""

from __future__ import annotations

import math

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
SKIP_LAYER_NORM = register_kernel(Kernel("skip_layer_norm", "kernel_skip_layer_norm", ("axis",), ("epsilon",),
                                         arity=(2, 5), results=(1, 2), same_type=(0, 1, 2, 3, 4)))
MATMUL_NBITS = register_kernel(Kernel("matmul_nbits", "kernel_matmul_nbits", ("K", "N", "bits", "block_size"),
                                      arity=(3, 5), same_type=(0, 2, 4)))
MATMUL_NBITS_SILU_MUL = register_kernel(Kernel("matmul_nbits_silu_mul", "kernel_matmul_nbits_silu_mul",
                                               ("K", "N", "bits", "block_size"), arity=(5, 7), same_type=(0, 2, 5)))
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


def _differs(got: sym.Expr, want: sym.Expr | None) -> bool:
    """Both dims static and different (a symbolic dim is left to the runtime's check)."""
    return want is not None and isinstance(got, int) and isinstance(want, int) and got != want


def _expect_shape(o: Node, i: int, what: str, want: list[sym.Expr | None], hint: str) -> None:
    """Input i has want's rank and its static dims (None: any); else a ModelError naming both shapes."""
    d = o.dims(i)
    if len(d) != len(want) or any(_differs(g, w) for g, w in zip(d, want, strict=True)):
        raise ModelError(f"{o.where}: {what} has shape {show(d)}; it must be {hint}")


def _expect_broadcast(o: Node, i: int, what: str, target: list[sym.Expr], onto: str) -> None:
    """Input i broadcasts to target (numpy rules, checked where both dims are static)."""
    d = o.dims(i)
    bad = len(d) > len(target) or any(isinstance(g, int) and g != 1 and _differs(g, t)
                                      for g, t in zip(reversed(d), reversed(target), strict=False))
    if bad:
        raise ModelError(f"{o.where}: {what} has shape {show(d)}, which does not broadcast to {onto} {show(target)}")


def _finite_attr(o: Node, name: str, default: float, nonnegative: bool) -> float:
    v = o.attr_float(name, default)
    if not math.isfinite(v) or (nonnegative and v < 0):
        raise ModelError(f"{o.where}: {name} is {v}; it must be a finite number" + (" >= 0" if nonnegative else ""))
    return v


def _rope_caches(o: Node, cos: int, head_size: sym.Expr | None, rotary_dim: int = 0) -> None:
    """cos (input `cos`) and sin (the next input) caches: both [max_position, rotary_dim / 2], rotary_dim even,
    positive and at most head_size (0: twice the cache's dim 1)."""
    c = o.dims(cos)
    _expect_shape(o, cos, f"cos_cache (input {cos})", [None, None], "[max_position, rotary_dim / 2]")
    _expect_shape(o, cos + 1, f"sin_cache (input {cos + 1})", c, f"cos_cache's shape {show(c)}")
    if rotary_dim < 0 or rotary_dim % 2:
        raise ModelError(f"{o.where}: rotary_embedding_dim {rotary_dim} must be even and >= 0 (0: from the caches)")
    if isinstance(c[1], int):
        if c[1] <= 0:
            raise ModelError(f"{o.where}: the cos/sin caches have shape {show(c)}; their dim 1 (rotary_dim / 2) "
                             "must be positive")
        if rotary_dim > 2 * c[1]:
            raise ModelError(f"{o.where}: rotary_embedding_dim {rotary_dim} is more than twice the caches' dim 1 "
                             f"({c[1]}); the caches must be [max_position, rotary_dim / 2]")
        rotary_dim = rotary_dim or 2 * c[1]
    if rotary_dim and isinstance(head_size, int) and rotary_dim > head_size:
        raise ModelError(f"{o.where}: the rotary dim {rotary_dim} (from the cos/sin caches' shape {show(c)}) is "
                         f"larger than the head size {head_size}")


def _rms_norm(o: Node) -> None:
    d = o.dims(0)
    if not d:
        raise ModelError(f"{o.where}: the input must have rank >= 1")
    skip = o.kind == "skip_rms_norm"
    axis = len(d) - 1 if skip else norm_axis(o, o.attr_int("axis", -1), len(d))
    # kernel inputs X, Scale, Skip, Bias; ONNX: X, Scale (Simplified) or X, Skip, Gamma, Bias (Skip...)
    to_slot = {0: 0, 1: 2, 2: 1, 3: 3} if skip else {0: 0, 1: 1}
    operands, positions = _present(o, list(to_slot))
    required = {0: "input", 1: "skip", 2: "gamma"} if skip else {0: "input", 1: "scale"}
    missing = [f"{what} (input {p})" for p, what in required.items() if p not in positions]
    if missing:
        raise ModelError(f"{o.where}: the {' and '.join(missing)} must be given")
    by_slot = sorted(zip((to_slot[p] for p in positions), operands, strict=True), key=lambda t: t[0])
    epsilon = _finite_attr(o, "epsilon", 1e-5, nonnegative=True)
    names = {0: "input", 1: "skip", 2: "gamma", 3: "bias"} if skip else {0: "input", 1: "scale"}
    for p in positions:
        if p:
            whole = skip and p == 1
            _expect_broadcast(o, p, f"{names[p]} (input {p})", d if whole else d[axis:],
                              "the input's shape" if whole else f"the normalized dims (from axis {axis})")
    text = checks.Text(1, sym.product(d[axis:]))
    o.require("le", text.values, f"input shape {text.dims(d)} has {{1}} elements from axis {axis} on; "
                                 "RMS normalization needs at least 1")
    replace(o, RMS_NORM, [v for _, v in by_slot],
            {"axis": axis, "epsilon": epsilon, "hipdnn.slots": [k for k, _ in by_slot]},
            [d] * len(o.op.results))


register(OpDef("SimplifiedLayerNormalization", "rms_norm", _rms_norm, (RMS_NORM,)))  # ORT: default domain only
register(OpDef("SkipSimplifiedLayerNormalization", "skip_rms_norm", _rms_norm, (RMS_NORM,), domains=(MS,)))


def _nbits_attrs(o: Node) -> tuple[int, int, int, int]:
    """K, N, bits and block_size of a MatMulNBits (or of the fused gate and up projections), checked, and input
    A's last dim checked against K."""
    a = o.dims(0)
    k, n = o.attr_int("K"), o.attr_int("N")
    bits, block = o.attr_int("bits", 4), o.attr_int("block_size")
    if bits != 4:
        o.fail(f"bits={bits} is not supported (only 4)")
    if k is None or n is None or block is None:
        raise ModelError(f"{o.where}: MatMulNBits needs the K, N and block_size attributes")
    if block < 16 or block & (block - 1):
        raise ModelError(f"{o.where}: block_size {block} must be a power of two >= 16")
    if k <= 0 or n <= 0:
        raise ModelError(f"{o.where}: K = {k} and N = {n} must be positive (A is [..., K], the result [..., N])")
    if not a or a[-1] != k:
        raise ModelError(f"{o.where}: input A has shape {show(a)}; its last dim must be K = {k}")
    return k, n, bits, block


def _nbits_weights(o: Node, k: int, n: int, block: int, first: int, what: str = "") -> None:
    """B, scales and zero points (inputs first, first + 1 and, if given, first + 2) hold the values MatMulNBits'
    layout has for K, N and block_size; the zero points packed UINT8. what: how messages name their projection."""
    zp = o.input(first + 2)
    if zp is not None and hir.element_dtype(zp) != 2:
        o.fail(f"{what}zero points must be packed UINT8 (zero points of the scales' element type are not "
               "supported)")
    blocks = -(-k // block)
    for i, name, count in ((first, "B", n * blocks * (block // 2)), (first + 1, "scales", n * blocks),
                           (first + 2, "zero points", n * ((blocks + 1) // 2))):
        if o.input(i) is not None and sym.product(o.dims(i)) != count:
            raise ModelError(f"{o.where}: {what}{name} has shape {show(o.dims(i))}; it must hold {count} values")


def _matmul_nbits(o: Node) -> None:
    k, n, bits, block = _nbits_attrs(o)
    accuracy = o.attr_int("accuracy_level", 0)
    if not 0 <= accuracy <= 4:
        raise ModelError(f"{o.where}: accuracy_level {accuracy} is outside 0..4 (0 unset, 1 float32, 2 float16, "
                         "3 bfloat16, 4 int8)")
    if o.input(4) is not None:
        o.fail("g_idx (input 4) is not supported")
    _nbits_weights(o, k, n, block, 1)
    if o.input(5) is not None and sym.product(o.dims(5)) != n:
        raise ModelError(f"{o.where}: bias has shape {show(o.dims(5))}; it must hold {n} values")
    operands, positions = _present(o, [0, 1, 2, 3, 5])
    slots = [4 if p == 5 else p for p in positions]  # bias is the kernel's input 4 (no g_idx)
    replace(o, MATMUL_NBITS, operands, {"K": k, "N": n, "bits": bits, "block_size": block, "hipdnn.slots": slots},
            [o.dims(0)[:-1] + [n]])


register(OpDef("MatMulNBits", "matmul_nbits", _matmul_nbits, (MATMUL_NBITS,), domains=(MS,)))


def _matmul_nbits_silu_mul(o: Node) -> None:
    """fuse-gated-matmul-nbits' SiLU(A x W_gate) * (A x W_up): its operand roles are the kernel's input positions
    (A; B, scales and zero points of the gate at 1..3, of up at 4..6), the zero points optional."""
    k, n, bits, block = _nbits_attrs(o)
    for first, what in ((1, "the gate projection's "), (4, "the up projection's ")):
        _nbits_weights(o, k, n, block, first, what)
    operands, slots = _present(o, list(range(7)))
    replace(o, MATMUL_NBITS_SILU_MUL, operands,
            {"K": k, "N": n, "bits": bits, "block_size": block, "hipdnn.slots": slots}, [o.dims(0)[:-1] + [n]])


# No ONNX op and no domain (a model cannot name it): only fuse-gated-matmul-nbits writes it.
register(OpDef("MatMulNBitsSiluMul", "matmul_nbits_silu_mul", _matmul_nbits_silu_mul, (MATMUL_NBITS_SILU_MUL,),
               domains=()))


def _rotary_embedding(o: Node) -> None:
    d = o.dims(0)
    if len(d) not in (3, 4):
        o.fail(f"input of rank {len(d)} is not supported (3 or 4)")
    if o.attr_int("is_packed_batching", 0):
        o.fail("is_packed_batching is not supported")
    operands, positions = _present(o, [0, 1, 2, 3])
    if positions != [0, 1, 2, 3]:
        raise ModelError(f"{o.where}: RotaryEmbedding needs input, position_ids, cos_cache and sin_cache")
    num_heads, rotary_dim = o.attr_int("num_heads", 0), o.attr_int("rotary_embedding_dim", 0)
    head_size: sym.Expr | None = d[3] if len(d) == 4 else None
    if num_heads < 0:
        raise ModelError(f"{o.where}: num_heads {num_heads} must be >= 0 (0: the head size is the rotary dim)")
    if len(d) == 3 and num_heads > 0 and isinstance(d[2], int):
        if d[2] % num_heads:
            raise ModelError(f"{o.where}: the input's hidden size {d[2]} is not a multiple of num_heads {num_heads}")
        head_size = d[2] // num_heads
    _rope_caches(o, 2, head_size, rotary_dim)
    pos = o.dims(1)
    seq = d[2] if len(d) == 4 else d[1]
    if sym.product(pos) != 1 and (len(pos) != 2 or _differs(pos[0], d[0]) or _differs(pos[1], seq)):
        raise ModelError(f"{o.where}: position_ids has shape {show(pos)}; it must be [batch, sequence] = "
                         f"{show([d[0], seq])} or hold one offset")
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
    if head_size == 0:
        raise ModelError(f"{o.where}: query hidden size {q[2]} leaves no room for {per_token} heads of size >= 1")
    batch, seq = q[0], q[1]
    if seq == 0:
        raise ModelError(f"{o.where}: query has shape {show(q)}; GroupQueryAttention needs at least one new token "
                         "(sequence length >= 1)")
    kv_shape = [batch, kv_heads, None, head_size]
    for i in (1, 2):
        if not packed:
            _expect_shape(o, i, f"{'key' if i == 1 else 'value'} (input {i})", [batch, seq, kv_heads * head_size],
                          f"[batch, sequence, kv_num_heads * head_size] = {show([batch, seq, kv_heads * head_size])}")
    if (o.input(3) is None) != (o.input(4) is None):
        raise ModelError(f"{o.where}: past_key and past_value must be both given or both absent")
    if o.input(3) is not None:
        hint = f"[batch, kv_num_heads, past, head_size] = [{sym.to_str(batch)}, {kv_heads}, past, {head_size}]"
        _expect_shape(o, 3, "past_key (input 3)", kv_shape, hint)
        _expect_shape(o, 4, "past_value (input 4)", o.dims(3), f"past_key's shape {show(o.dims(3))}")
    for i in (5, 6):
        if o.input(i) is None:
            raise ModelError(f"{o.where}: input {i} ({'seqlens_k' if i == 5 else 'total_sequence_length'}) "
                             "is required")
    _expect_shape(o, 5, "seqlens_k (input 5)", [batch], f"[batch] = {show([batch])}")
    if sym.product(o.dims(6)) != 1:
        raise ModelError(f"{o.where}: total_sequence_length (input 6) has shape {show(o.dims(6))}; it must hold "
                         "one value")
    do_rotary = o.attr_int("do_rotary", 0)
    if do_rotary and (o.input(7) is None or o.input(8) is None):
        raise ModelError(f"{o.where}: do_rotary needs cos_cache and sin_cache")
    if do_rotary:
        _rope_caches(o, 7, head_size)
    scale = _finite_attr(o, "scale", 0.0, nonnegative=False)
    softcap = _finite_attr(o, "softcap", 0.0, nonnegative=True)
    total = o.host(6)
    if total is None or len(total) != 1:
        o.fail("total_sequence_length must be computable on the host (from input shapes, constants or a small "
               "graph input)")
    total = total[0]
    past = o.dims(3)[2] if o.input(3) is not None else 0
    present = sym.maximum(past, total) if o.input(3) is not None else total
    t = checks.Text(seq, total)
    o.require("le", t.values, "total_sequence_length {1} is smaller than the query's sequence length {0}")
    # As onnxruntime: the present caches hold past + sequence positions (a cache that grows) or the
    # past buffer itself (one shared, preallocated buffer), so a fed total_sequence_length beyond
    # past + sequence is refused before it sizes the present caches.
    beyond_past = sym.maximum(sym.sub(total, past), 0)
    t = checks.Text(sym.select_zero(beyond_past, seq, beyond_past), seq, total, past)
    o.require("eq", t.values, "total_sequence_length {2} must equal past_sequence_length {3} + sequence length {1} "
                              "(a growing KV cache) or be at most past_sequence_length (a shared, preallocated "
                              "one)")
    kv = [batch, kv_heads, present, head_size]
    replace(o, GQA, operands,
            {"num_heads": heads, "kv_num_heads": kv_heads, "local_window_size": o.attr_int("local_window_size", -1),
             "do_rotary": do_rotary, "rotary_interleaved": o.attr_int("rotary_interleaved", 0),
             "scale": scale, "softcap": softcap, "hipdnn.slots": positions},
            [[batch, seq, heads * head_size], kv, kv])


register(OpDef("GroupQueryAttention", "group_query_attention", _group_query_attention, (GQA,), domains=(MS,)))
