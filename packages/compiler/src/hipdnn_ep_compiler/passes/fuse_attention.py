"""Pass fuse-attention: multi-head attention spelled out op by op becomes one import-level `onnx.onnx_attention`
(ai.onnx Attention over 3-D inputs), which ops/attention.py lowers to one call of the fused attention kernel.

torch.onnx.export of transformers' BERT (eager attention) writes each layer's self-attention as about ten ops,
each a kernel launch, the [batch, heads, seq, seq] scores written and read several times:

    q4 = Transpose(Reshape(q, [B, S, H, D]), perm=[0, 2, 1, 3])            (k4, v4 likewise; K's transpose
    kt = Transpose(Reshape(k, [B, S, H, D]), perm=[0, 2, 3, 1])             may be two: [0,2,1,3], [0,1,3,2])
    p  = Softmax(MatMul(q4, kt) / sqrt(D) + mask, axis=-1)
    y  = Reshape(Transpose(MatMul(p, v4), perm=[0, 2, 1, 3]), [B, S, H * D])

This pass rewrites such a chain, rooted at the final Reshape, into

    y  = Reshape(Attention(q', k', v', mask, q_num_heads=H, kv_num_heads=Hk, scale=s), [B, S, H * D])

where q' = Reshape(Reshape(q, target), [0, 0, -1]): the heads Reshape stays as imported (so whatever target it
has, q' holds exactly the rows the original's heads hold) and both Reshapes are views, no kernel.  The
Transposes, both MatMuls, the scale, the mask Add and the Softmax go.

What is recognised:
- Q, K, V each Transpose(Reshape(x, target)) with Q's and V's perm [0, 2, 1, 3] and K's [0, 2, 3, 1] (or
  [0, 2, 1, 3] then [0, 1, 3, 2]); x 3-D, each Reshape result 4-D with a heads count (H for Q, Hk for K and V,
  Hk dividing H) that its type gives, or the target's constant entry 2, or (entry 2 being -1, as
  transformers' view(*shape[:-1], -1, head_dim) writes it) x's static hidden size over the target's constant
  head size (entry 3); Q and K of the same static head size; no two of them of different static batch sizes;
- the scale: constant factors, multiplied, from Div or Mul of the scores by a constant, and Mul of Q's and of
  K's transposed heads by a constant (torch's scaled_dot_product_attention export scales each by
  sqrt(scale)); each constant a one-element float of Q's type and rank <= 4, finite and nonzero; none at all
  is scale 1;
- the mask: an Add of the scaled scores and any tensor of Q's type and rank <= 4 (the kernel broadcasts it
  to [batch, heads, seq, keys] and refuses at run time one that does not, as the Add would); absent: none;
- Softmax over axis -1 (or 3, or no axis given), optionally followed by Where(IsNaN(p), 0, p) (transformers'
  sdpa mask path zeroes a row whose every key is masked: the kernel gives such a row zeros);
- MatMul(p, v4), optionally a Reshape that keeps its shape (torch's scaled_dot_product_attention export:
  a target Concat of four one-element pieces, each Unsqueeze(Gather(Shape(t), k)) of the context's dim k, read
  from the context itself or, for k = 2, from Q's heads or, for k = 3, from V's heads; at most one a
  constant -1), Transpose [0, 2, 1, 3], and a Reshape to rank 3 (the root);
- every value between the heads Reshapes and the root read only by the chain's next op (no graph output, no
  other reader) but for Shape ops, which read dims only (the sdpa export reads Q's and V's heads and the
  context so): such a value stays for its Shapes, which refine-shapes folds to dims, and eliminate-dead-ops
  then erases it; the softmax result read by the IsNaN and Where only, where they follow;
- Q float32 or float16.
Anything else stays as imported.
"""

from __future__ import annotations

import math

from torch_mlir import ir

from .. import ir as hir
from ..abi import RuntimeAbi
from ..ops.contrib import ATTENTION
from ..ops.node import kernel_in
from . import fusion

NAME = "fuse-attention"
USES_ABI = True  # run_pipeline passes the target manifest: no fusion for a runtime without the kernel

FLOAT32, FLOAT16 = 1, 10
_Q_PERM = [0, 2, 1, 3]
_K_PERM = [0, 2, 3, 1]
_SWAP_LAST = [0, 1, 3, 2]


def _dims(value: ir.Value) -> list[int] | None:
    """The dims of a ranked tensor (dynamic ones as ir.ShapedType's marker), or None."""
    if not isinstance(value.type, ir.RankedTensorType):
        return None
    return list(ir.RankedTensorType(value.type).shape)


def _static(d: int) -> bool:
    return not ir.ShapedType.is_dynamic_size(d)


def _user(use) -> ir.Operation:
    owner = use.owner
    return owner.operation if isinstance(owner, ir.OpView) else owner


def _uses(value: ir.Value) -> int:
    """How many ops read `value` for its data: Shape ops (which read its dims only, as torch's
    scaled_dot_product_attention export does) left out.  An intermediate that a Shape reads stays, for the
    Shape, until refine-shapes has folded that to the dims and eliminate-dead-ops erases it."""
    return sum(1 for u in value.uses if _user(u).name != "onnx.shape")


class _Chain:
    """The ops of one candidate chain (to erase once rewritten) and its element type."""

    def __init__(self, dtype: int):
        self.dtype = dtype
        self.ops: list[ir.Operation] = []
        self.scale = 1.0
        self.v4: ir.Value | None = None

    def inner(self, value: ir.Value, name: str, uses: int = 1) -> ir.Operation | None:
        """The op `name` producing `value`, read by `uses` ops (the chain's), taken into the chain; or None."""
        op = hir.defining_op(value)
        if op is None or op.name != name or _uses(value) != uses or fusion.given_inputs(op) is None:
            return None
        self.ops.append(op)
        return op

    def constant(self, value: ir.Value) -> float | None:
        """The value of a one-element float constant of the chain's type and rank <= 4, finite and nonzero."""
        op = hir.defining_op(value)
        if op is None or op.name not in fusion.CONSTANT_OPS or hir.element_dtype(value) != self.dtype:
            return None
        t = ir.RankedTensorType(value.type)
        if t.rank > 4 or not t.has_static_shape or math.prod(t.shape) != 1:
            return None
        vals = hir.float_values(value)
        if not vals or len(vals) != 1 or not math.isfinite(vals[0]) or vals[0] == 0:
            return None
        return vals[0]

    def scaled(self, value: ir.Value, allow_div: bool) -> ir.Value:
        """`value` through one Mul by a constant (or Div, when allow_div) taken into the chain, its factor
        multiplied into the scale; `value` itself when it is no such op."""
        op = hir.defining_op(value)
        if op is None or op.name not in ("onnx.mul", "onnx.div") or (op.name == "onnx.div" and not allow_div):
            return value
        if _uses(value) != 1 or fusion.given_inputs(op) is None:
            return value
        a, b = op.operands
        pairs = [(a, b)] if op.name == "onnx.div" else [(a, b), (b, a)]
        for x, c in pairs:
            k = self.constant(c)
            if k is not None and hir.element_dtype(x) == self.dtype:
                self.ops.append(op)
                self.scale *= (1.0 / k) if op.name == "onnx.div" else k
                return x
        return value

    def heads(self, value: ir.Value, perms: list[list[int]]) -> tuple[ir.Value, int, int | None] | None:
        """(the heads Reshape's result r, H, D) where `value` is Transpose(s) of r by `perms` in order (the
        Transposes, read by the chain only, taken into it); D None where dynamic."""
        for perm in reversed(perms):
            t = self.inner(value, "onnx.transpose")
            if t is None or hir.get_ints(t, "onnx.perm") != perm:
                return None
            value = t.operands[0]
        r = hir.defining_op(value)
        if r is None or r.name != "onnx.reshape" or _uses(value) != 1:
            return None
        d = _dims(value)
        src = _dims(r.operands[0])
        if d is None or len(d) != 4 or src is None or len(src) != 3 or hir.element_dtype(value) != self.dtype:
            return None
        heads, size = d[2] if _static(d[2]) else None, d[3] if _static(d[3]) else None
        if heads is None:  # from the target's constants: H itself, or the static hidden size over D
            tail = _target_tail(r.operands[1])
            hidden = src[2] if _static(src[2]) else None
            size = size if size is not None else (tail[1] if tail[1] is not None and tail[1] > 0 else None)
            if tail[0] is not None and tail[0] > 0:
                heads = tail[0]
            elif tail[0] == -1 and size and hidden is not None and hidden % size == 0:
                heads = hidden // size
        if heads is None or heads <= 0:
            return None
        return value, heads, size


def _target_tail(target: ir.Value) -> list[int | None]:
    """Entries 2 and 3 of a 4-entry Reshape target where constants give them (a hipdnn.constant, or a Concat
    whose trailing pieces are), None where not."""
    op = hir.defining_op(target)
    if op is None:
        return [None, None]
    if op.name == "hipdnn.constant":
        vals = hir.get_ints(op, "values")
        return vals[2:] if vals is not None and len(vals) == 4 else [None, None]
    if op.name != "onnx.concat" or hir.get_int(op, "onnx.axis", None) not in (0, -1) or fusion.given_inputs(op) is None:
        return [None, None]
    tail: list[int | None] = []
    for piece in reversed(list(op.operands)):
        p = hir.defining_op(piece)
        d = _dims(piece)
        if d is None or len(d) != 1 or not _static(d[0]):
            break
        vals = hir.get_ints(p, "values") if p is not None and p.name == "hipdnn.constant" else None
        tail = (list(vals) if vals is not None else [None] * d[0]) + tail
        if len(tail) >= 2:
            break
    return tail[-2:] if len(tail) >= 2 else [None, None]


def _match(root: ir.Operation) -> dict | None:
    """The parts of the chain ending at Reshape `root`, or None."""
    ins = fusion.given_inputs(root)
    y = root.results[0]
    yd = _dims(y)
    if ins is None or yd is None or len(yd) != 3:
        return None
    dtype = hir.element_dtype(y)
    if dtype not in (FLOAT32, FLOAT16):
        return None
    chain = _Chain(dtype)
    ctx_t = chain.inner(ins[0], "onnx.transpose")
    if ctx_t is None or hir.get_ints(ctx_t, "onnx.perm") != _Q_PERM:
        return None
    ctx = chain.inner(ctx_t.operands[0], "onnx.matmul")
    same = None
    if ctx is None:  # torch's sdpa export: Reshape(ctx, [ctx.shape[0], -1, q.shape[2], v.shape[3]]) first
        same = chain.inner(ctx_t.operands[0], "onnx.reshape")
        ctx = None if same is None else chain.inner(same.operands[0], "onnx.matmul")
        if ctx is None:
            return None
    probs, chain.v4 = ctx.operands
    # Where(IsNaN(p), 0, p) after the softmax: the sdpa mask's zeroing of rows with no key
    where = hir.defining_op(probs)
    if (where is not None and where.name == "onnx.where" and _uses(probs) == 1
            and fusion.given_inputs(where) is not None):
        cond, zero, p = where.operands
        isnan = hir.defining_op(cond)
        z = hir.float_values(zero)
        if (isnan is None or isnan.name != "onnx.is_nan" or isnan.operands[0] != p or _uses(cond) != 1
                or _uses(p) != 2 or z is None or len(z) != 1 or z[0] != 0.0
                or hir.element_dtype(zero) != dtype or math.prod(ir.RankedTensorType(zero.type).shape) != 1
                or ir.RankedTensorType(zero.type).rank > 4):
            return None
        chain.ops += [where, isnan]
        probs = p
        soft = chain.inner(probs, "onnx.softmax", uses=2)
    else:
        soft = chain.inner(probs, "onnx.softmax")
    # (no axis: -1, as the Softmax rule reads it; the loader converts models below opset 13)
    if soft is None or hir.get_int(soft, "onnx.axis", -1) not in (-1, 3):
        return None
    x = soft.operands[0]
    add = chain.inner(x, "onnx.add")
    found = None
    if add is None:
        found = _scores(chain, x, None)
    else:
        for s, m in (add.operands[0], add.operands[1]), (add.operands[1], add.operands[0]):
            md = _dims(m)
            if md is None or len(md) > 4 or hir.element_dtype(m) != dtype:
                continue
            mark, scale = len(chain.ops), chain.scale
            found = _scores(chain, s, m)
            if found is not None:
                break
            del chain.ops[mark:]
            chain.scale = scale
    if found is None or (same is not None and not _identity(same, ctx.results[0], found["q4"], chain.v4)):
        return None
    return found


def _dim_of(piece: ir.Value) -> tuple[ir.Value, int] | None:
    """(X, k) where `piece` is Unsqueeze(Gather(Shape(X), k), [0]): a one-element vector of X's dim k."""
    u = hir.defining_op(piece)
    if u is None or u.name != "onnx.unsqueeze" or fusion.given_inputs(u) is None or len(u.operands) != 2:
        return None
    axes = hir.defining_op(u.operands[1])
    if axes is None or axes.name != "hipdnn.constant" or hir.get_ints(axes, "values") != [0]:
        return None
    g = hir.defining_op(u.operands[0])
    if g is None or g.name != "onnx.gather" or fusion.given_inputs(g) is None or hir.get_int(g, "onnx.axis", 0) != 0:
        return None
    idx = hir.defining_op(g.operands[1])
    k = hir.get_ints(idx, "values") if idx is not None and idx.name == "hipdnn.constant" else None
    sh = hir.defining_op(g.operands[0])
    if k is None or len(k) != 1 or sh is None or sh.name != "onnx.shape" or len(sh.operands) != 1:
        return None
    if "onnx.start" in sh.attributes or "onnx.end" in sh.attributes:
        return None
    return sh.operands[0], k[0]


def _identity(reshape: ir.Operation, ctx: ir.Value, q4: ir.Value, v4: ir.Value) -> bool:
    """Whether Reshape `reshape` of ctx [B, H, S, Dv] (= softmax(q4 k) v4) keeps its shape: its target a Concat
    of four one-element pieces, each ctx's dim (read from ctx, or S from q4's dim 2, Dv from v4's dim 3), one
    of them maybe -1."""
    cat = hir.defining_op(reshape.operands[1])
    if cat is None or cat.name != "onnx.concat" or fusion.given_inputs(cat) is None or len(cat.operands) != 4:
        return False
    if hir.get_int(cat, "onnx.axis", None) not in (0, -1) or hir.get_int(reshape, "onnx.allowzero", 0):
        return False
    same = {(ctx, 0), (ctx, 1), (ctx, 2), (ctx, 3), (q4, 2), (v4, 3)}
    inferred = 0
    for k, piece in enumerate(cat.operands):
        p = hir.defining_op(piece)
        if p is not None and p.name == "hipdnn.constant" and hir.get_ints(p, "values") == [-1]:
            inferred += 1
            continue
        d = _dim_of(piece)
        if d is None or d[1] != k or not any(d[0] == v and d[1] == i for v, i in same):
            return False
    return inferred <= 1


def _scores(chain: _Chain, scores: ir.Value, mask: ir.Value | None) -> dict | None:
    """The rest of the match from the scaled scores: MatMul(Q heads, K heads transposed), each maybe scaled."""
    scores = chain.scaled(scores, allow_div=True)
    mm = chain.inner(scores, "onnx.matmul")
    if mm is None:
        return None
    qs, ks = mm.operands
    q4 = chain.scaled(qs, allow_div=False)
    k4 = chain.scaled(ks, allow_div=False)
    q = chain.heads(q4, [_Q_PERM])
    if q is None:
        return None
    mark = len(chain.ops)
    k = chain.heads(k4, [_K_PERM])
    if k is None:
        del chain.ops[mark:]
        k = chain.heads(k4, [_Q_PERM, _SWAP_LAST])
    if k is None:
        return None
    v = chain.heads(chain.v4, [_Q_PERM])
    if v is None:
        return None
    heads, kv_heads = q[1], k[1]
    if v[1] != kv_heads or heads % kv_heads or q[2] is None or k[2] != q[2]:
        return None
    # one batch size (the MatMuls would broadcast a batch of 1; the kernel does not)
    batches = {d[0] for d in (_dims(q[0]), _dims(k[0]), _dims(v[0])) if _static(d[0])}
    if len(batches) > 1:
        return None
    return {"q": q[0], "k": k[0], "v": v[0], "mask": mask, "heads": heads, "kv_heads": kv_heads,
            "scale": chain.scale, "ops": chain.ops, "dtype": chain.dtype, "q4": q4}


def _merged_type(r: ir.Value) -> ir.Type:
    """[d0, d1, d2 * d3] of the 4-D tensor r (dynamic where any factor is)."""
    t = ir.RankedTensorType(r.type)
    d = list(t.shape)
    last = d[2] * d[3] if _static(d[2]) and _static(d[3]) else ir.ShapedType.get_dynamic_size()
    return ir.RankedTensorType.get([d[0], d[1], last], t.element_type)


def _rewrite(rewriter, root: ir.Operation, found) -> None:
    """Rewrites what _match found at a Reshape (fusion.pattern calls it)."""
    name = hir.get_str(root, "onnx.node", root.name)
    with root.context, root.location:
        ip = ir.InsertionPoint(root)
        flat = hir.create("hipdnn.constant", [], ["tensor<3xi64>"],
                          {"name": f"{name} heads merged", "values": [0, 0, -1]}, before=root).results[0]

        def merge(r: ir.Value) -> ir.Value:
            return ir.Operation.create("onnx.reshape", results=[_merged_type(r)], operands=[r, flat],
                                       attributes={"operand_roles": hir.to_attr([0, 1]),
                                                   "onnx.node": ir.StringAttr.get(name)}, ip=ip).results[0]

        operands = [merge(found["q"]), merge(found["k"]), merge(found["v"])]
        if found["mask"] is not None:
            operands.append(found["mask"])
        ctx_t = hir.defining_op(root.operands[0])
        attrs = {"operand_roles": hir.to_attr(list(range(len(operands)))),
                 "onnx.node": ir.StringAttr.get(name),
                 "onnx.q_num_heads": hir.to_attr(found["heads"]),
                 "onnx.kv_num_heads": hir.to_attr(found["kv_heads"]),
                 "onnx.scale": ir.FloatAttr.get(ir.F64Type.get(), found["scale"]),
                 "hipdnn.mask_broadcasts": hir.to_attr(1)}
        att = ir.Operation.create("onnx.onnx_attention", results=[_merged_type(ctx_t.results[0])], operands=operands,
                                  attributes=attrs, ip=ip)
        new = ir.Operation.create("onnx.reshape", results=[root.results[0].type],
                                  operands=[att.results[0], root.operands[1]],
                                  attributes={k: root.attributes[k] for k in root.attributes}, ip=ip)
    rewriter.replace_op(root, [new.results[0]])
    fusion.erase_chain(rewriter, found["ops"])


def run(module: ir.Module, abi: RuntimeAbi | None = None) -> ir.Module:
    """abi: the manifest compiled against; a target ABI without the attention kernel (before 1.3) keeps the
    chains as imported, as before this pass (the default, the bundled manifest, has it)."""
    if not kernel_in(abi, ATTENTION):
        return module
    return fusion.apply(module, [("onnx.reshape", fusion.pattern(_match, _rewrite))], top_down=False)
