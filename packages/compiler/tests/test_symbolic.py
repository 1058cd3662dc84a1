"""Symbolic dimension expressions."""

import pytest

from hipdnn_ep_compiler import symbolic as s


def test_simplification():
    e = s.div(s.mul(8, "a", "b"), s.mul("a", "b"))
    assert e == 8
    e = s.add(s.mul(2, "a"), "a", 3, -3)
    assert e == s.mul(3, "a")
    assert s.sub("a", "a") == 0


ROUND_TRIP = [
    s.add(s.mul(2, "d0_0"), "d0_1", -3),
    s.maximum(s.ceildiv(s.add("d0_0", "d0_1"), 4), s.select_negative(s.sub("v1_0", 5), 1, 2)),
    s.broadcast(["d0_0"], ["d0_1"])[0],
    s.div(s.mul(8, "d0_0", "d0_1"), 3),
    s.minimum("d0_0", s.select_zero("v1_2", "d0_1", s.mul(-1, "v1_1"))),
    s.mul(256, s.ceildiv(s.mul(4, "d0_0"), 256)),
]


def test_expressions_round_trip_through_index_values_and_canonicalize():
    """What the shape rules compute is what the IR holds: an expression written as arith over
    tensor.dim / tensor.extract (ir.IndexBuilder), folded by upstream canonicalize and cse, reads back
    (ir.dim_expr) as the same expression."""
    from hipdnn_ep_compiler import ir as hir

    module = hir.ir.Module.parse('''
func.func @main(%arg0: tensor<?x?xf32>, %arg1: tensor<3xi64>) {
  return
}''', hir.new_context())
    ret = hir.ops(module)[-1]
    build = hir.IndexBuilder(ret)
    for e in ROUND_TRIP:
        hir.create(hir.CHECK, [build(e)], [], {"where": "w", "kind": "nonneg", "text": ""}, before=ret)
    hir.fold_shapes(module)
    text = str(module)
    assert "tensor.dim %arg0" in text and "tensor.extract %arg1" in text
    again = hir.ir.Module.parse(text, hir.new_context())  # and through the IR's text
    read = [hir.dim_expr(op.operation.operands[0]) for op in hir.body(again).operations
            if op.operation.name == hir.CHECK]
    assert read == ROUND_TRIP


def test_an_op_the_compiler_does_not_emit_is_not_read_as_a_dim():
    from hipdnn_ep_compiler import ir as hir

    module = hir.ir.Module.parse('''
func.func @main(%arg0: tensor<?xf32>) {
  %c0 = arith.constant 0 : index
  %d = tensor.dim %arg0, %c0 : tensor<?xf32>
  %r = arith.remsi %d, %d : index
  "hipdnn.check"(%r) {kind = "nonneg", text = "", where = "w"} : (index) -> ()
  return
}''', hir.new_context())
    [check] = [op.operation for op in hir.body(module).operations if op.operation.name == hir.CHECK]
    with pytest.raises(ValueError, match="arith.remsi is not a shape computation"):
        hir.dim_expr(check.operands[0])


def test_evaluate():
    expr = s.select_negative(s.sub("a", 5), s.minimum("a", "b"), s.div("b", 2))
    assert s.evaluate(expr, {"a": 3, "b": 8}) == 3
    assert s.evaluate(expr, {"a": 9, "b": 8}) == 4
    assert s.evaluate(s.ceildiv("a", 4), {"a": 9}) == 3
    assert s.div(-7, 2) == -3 and s.evaluate(s.div("a", 2), {"a": -7}) == -3  # truncation, as ONNX Div


def test_broadcast():
    assert s.broadcast(["a", 1, 4], [3, 1]) == ["a", 3, 4]
    [ab] = s.broadcast(["a"], ["b"])
    # every valid pair (equal, or one of them 1), including 0 against 1, which broadcasts to 0
    for a, b, want in [(3, 3, 3), (1, 5, 5), (5, 1, 5), (0, 1, 0), (1, 0, 0), (1, 1, 1), (0, 0, 0)]:
        assert s.evaluate(ab, {"a": a, "b": b}) == want
    assert s.nonnegative(ab)
    with pytest.raises(ValueError, match="3 and 4"):
        s.broadcast([3], [4])


def test_maximum_of_multiples_of_a_dimension_product():
    x = s.ceildiv(s.mul(32, "a", "b"), 256)
    assert s.maximum(s.mul(256, x), s.mul(512, x)) == s.mul(512, x)
    # not for a base that may be negative
    neg = s.add("a", -5)
    assert s.maximum(s.mul(2, neg), s.mul(3, neg)) != s.mul(3, neg)


def test_broadcast_of_two_dims_is_symmetric_and_idempotent():
    """Valid pairs give the same value either way round, so the operands' order is canonical: a dim
    broadcast against its mirror image (Add(y, Transpose(y))) is one expression, broadcast again it
    stays that expression."""
    [ab] = s.broadcast(["a"], ["b"])
    assert s.broadcast(["b"], ["a"]) == [ab]
    assert s.broadcast([ab, ab], [ab, ab]) == [ab, ab]



def test_a_select_on_the_sign_of_a_dim_keeps_the_non_negative_side():
    # Slice's end "e < 0 ? e + dim : e" with e a dim (BERT's position ids sliced by the sequence length)
    assert s.select_negative("a", s.add("a", 512), "a") == "a"
    assert s.select_negative(s.mul(2, "a", "b"), 0, "b") == "b"
    # not for a value that may be negative: an input value, or a difference of dims
    assert s.select_negative("v0_0", s.add("v0_0", 512), "v0_0") != "v0_0"
    kept = s.select_negative(s.sub("a", "b"), 0, "a")
    assert kept != "a" and s.evaluate(kept, {"a": 2, "b": 3}) == 0


def test_maximum_and_minimum_of_a_dim_and_a_non_positive_constant():
    assert s.maximum("a", 0) == "a" and s.maximum(0, s.add("a", "b")) == s.add("a", "b")
    assert s.maximum(-3, "a") == "a"
    assert s.minimum("a", 0) == 0 and s.minimum(-2, s.mul("a", "b")) == -2
    # not for a value that may be negative, nor a positive constant
    for kept in (s.maximum(s.add("a", -1), 0), s.maximum("v0_0", 0), s.minimum("v0_0", 0), s.maximum("a", 1),
                 s.minimum("a", 512)):
        assert isinstance(kept, tuple) and kept[0] in ("max", "min")
    assert s.evaluate(s.maximum(s.add("a", -1), 0), {"a": 0}) == 0


def test_a_select_of_zero_at_zero_is_its_argument():
    m = s.minimum("a", 512)
    assert s.select_zero(m, 0, m) == m  # a Slice's count "span == 0 ? 0 : span"
    # not when the zero side is another value, or the other side is not the argument
    for kept in (s.select_zero(m, 1, m), s.select_zero(m, 0, "a")):
        assert isinstance(kept, tuple) and kept[0] == "selzero"
    assert s.evaluate(s.select_zero(m, 1, m), {"a": 0}) == 1


def test_broadcast_of_a_dim_and_its_cap_is_the_dim():
    """min(seq, 512) against seq (BERT's position embeddings added to the token embeddings): they
    broadcast only where equal or both 1, so the result is seq for every valid pair."""
    capped = s.minimum("a", 512)
    assert s.broadcast([capped, 768], ["b", "a", 768]) == ["b", "a", 768]
    assert s.broadcast(["a"], [capped]) == ["a"]
    for a in (0, 1, 2, 512):  # the valid bindings: min(a, 512) == a
        assert s.evaluate(capped, {"a": a}) == a
    assert s.broadcast([s.minimum("a", 1)], ["a"]) == ["a"]  # min(a, 1) is 1 (or 0 with a) where valid
    # not a cap by another dim (min(a, c) = 0 against a = 1 broadcasts to 0), nor another dim's cap
    for other, cap in (("a", s.minimum("a", "c")), ("b", capped)):
        [kept] = s.broadcast([cap], [other])
        assert isinstance(kept, tuple) and kept[0] == "selzero"
    assert s.evaluate(s.broadcast([s.minimum("a", "c")], ["a"])[0], {"a": 1, "c": 0}) == 0
    assert not s._capped(("min", 0, "a"), "a")  # a cap of 0: min(a, 0) = 0 against a = 1 broadcasts to 0

def _clamp_chain(depth: int) -> s.Expr:
    """A Slice [1:-1] count applied `depth` times: each level uses the previous one three times."""
    d = "d0_0"
    for _ in range(depth):
        start = s.minimum(s.maximum(1, 0), d)
        end = s.minimum(s.maximum(s.add(-1, d), 0), d)
        d = s.maximum(s.ceildiv(s.sub(end, start), 1), 0)
    return d


def test_large_expressions_become_named_symbols_of_bounded_size():
    with s.use_scope() as scope:
        e = _clamp_chain(40)
        assert s.size(e) <= s.MAX_NODES
        assert scope.defs and all(s.size(d) <= s.MAX_NODES for d in scope.defs.values())
        assert len(scope.defs) <= 3 * 40  # linear in the depth
        # the value is the unbounded expression's: the count drops by 2 per level, down to 0
        for n, want in [(100, 20), (81, 1), (80, 0), (3, 0)]:
            assert s.evaluate(e, {"d0_0": n}) == want
            assert s.evaluate_int64(e, {"d0_0": n}) == want
        assert s.symbols(e) == {"d0_0"}  # the input symbols, through the definitions
        assert s.nonnegative(e)


def test_named_symbols_are_interned_per_scope():
    with s.use_scope() as scope:
        assert _clamp_chain(10) == _clamp_chain(10)
        n = len(scope.defs)
        _clamp_chain(10)
        assert len(scope.defs) == n  # the same definitions, the same names
    with s.use_scope() as other:
        _clamp_chain(10)
        assert other is not scope and len(other.defs) == n


def test_definitions_lists_each_name_after_the_names_it_uses():
    with s.use_scope():
        e = _clamp_chain(30)
        defs = s.definitions([e])
        order = [name for name, _ in defs]
        assert len(order) > 3
        for k, (_, d) in enumerate(defs):
            assert all(order.index(u) < k for u, _ in s.definitions([d]))
        # known names, and what only they use, are left out
        assert s.definitions([e], known=set(order)) == []


def test_a_long_sum_is_named_in_runs():
    with s.use_scope() as scope:
        total = s.add(*(s.mul(k + 2, f"d{k}_0") for k in range(3 * s.MAX_NODES)))
        assert s.size(total) <= s.MAX_NODES
        assert all(s.size(d) <= s.MAX_NODES for d in scope.defs.values())
        env = {f"d{k}_0": k for k in range(3 * s.MAX_NODES)}
        assert s.evaluate(total, env) == sum((k + 2) * k for k in range(3 * s.MAX_NODES))


def test_past_max_symbols_the_bound_error_is_raised(monkeypatch):
    monkeypatch.setattr(s, "MAX_SYMBOLS", 2)
    with s.use_scope(), pytest.raises(s.ShapeBoundError, match="more than 2 named symbols"):
        _clamp_chain(20)
