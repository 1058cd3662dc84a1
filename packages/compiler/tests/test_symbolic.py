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
