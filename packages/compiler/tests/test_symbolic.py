"""Symbolic dimension expressions."""

import pytest

from hipdnn_ep_compiler import symbolic as s


def test_simplification_and_round_trip():
    e = s.div(s.mul(8, "a", "b"), s.mul("a", "b"))
    assert e == 8
    e = s.add(s.mul(2, "a"), "a", 3, -3)
    assert e == s.mul(3, "a")
    assert s.sub("a", "a") == 0
    expr = s.maximum(s.ceildiv(s.add("a", "b"), 4), s.select_negative("c", 1, 2))
    assert s.parse(s.to_str(expr)) == expr


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


def test_parse_rejects_unknown_ops():
    with pytest.raises(ValueError, match="unknown expression op"):
        s.parse("(pow a 2)")


def test_maximum_of_multiples_of_a_dimension_product():
    x = s.ceildiv(s.mul(32, "a", "b"), 256)
    assert s.maximum(s.mul(256, x), s.mul(512, x)) == s.mul(512, x)
    # not for a base that may be negative
    neg = s.add("a", -5)
    assert s.maximum(s.mul(2, neg), s.mul(3, neg)) != s.mul(3, neg)
