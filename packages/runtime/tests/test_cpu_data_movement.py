"""The CPU data movement kernels (gather, gather_elements, trilu, transpose, concat, slice, expand)
against numpy references (kernels/cpu/data_movement.cpp)."""

from __future__ import annotations

import kernel_util
import numpy as np
import pytest
from conftest import rand
from kernel_util import BOOL, F16, F32, I32, I64, InvalidArgumentError, call_raw, rng, run

state = kernel_util.state  # one CPU state per module


@pytest.mark.parametrize("index_dtype", [I32, I64])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_gather_elements(state, index_dtype, axis):
    data = rand((3, 4, 5), F32, seed=1)
    shape = [2, 3, 4]
    idx = rng(axis).integers(-data.shape[axis], data.shape[axis], size=shape).astype(index_dtype)
    out = run(state, "gather_elements", [data, idx], tuple(shape), ints=[axis])
    normalized = np.where(idx < 0, idx + data.shape[axis], idx)
    window = tuple(slice(None) if d == axis else slice(0, n) for d, n in enumerate(shape))  # the indexed region
    np.testing.assert_array_equal(out, np.take_along_axis(data[window], normalized, axis=axis))


def test_gather_elements_checks_every_index_before_writing(state):
    out = np.full((1, 2), 5.0, F32)
    with pytest.raises(InvalidArgumentError, match="index 4 at position 1 is out of range for axis 1 of size 3"):
        call_raw(state, "gather_elements", [np.ones((2, 3), F32), np.array([[0, 4]], I64)], [out], [1])
    assert np.all(out == 5.0)
    with pytest.raises(InvalidArgumentError, match="exceed data dims"):
        call_raw(state, "gather_elements", [np.ones((2, 3), F32), np.zeros((3, 1), I64)], [np.empty((3, 1), F32)],
                 [1])


@pytest.mark.parametrize("dtype", [F32, F16, I64, BOOL])
@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [-2, 0, 1, 7])
def test_trilu(state, dtype, upper, k):
    x = rand((2, 4, 5), dtype, seed=3, low=1, high=9)
    out = run(state, "trilu", [x, np.array([k], I64)], x.shape, ints=[upper])
    np.testing.assert_array_equal(out, (np.triu if upper else np.tril)(x, k))


def test_trilu_refuses_a_vector(state):
    with pytest.raises(InvalidArgumentError, match="Trilu needs at least 2"):
        run(state, "trilu", [np.ones(3, F32), np.array([0], I64)], (3,), ints=[1])


# ---------------------------------------------------------------- data movement

@pytest.mark.parametrize("dtype", [F32, F16, I64, BOOL, np.int8, np.float64])
@pytest.mark.parametrize("shape,perm", [((2, 3), [1, 0]), ((2, 3, 4), [2, 0, 1]), ((2, 3, 4), [0, 1, 2]),
                                        ((1, 5, 1, 2), [3, 2, 1, 0]), ((), []), ((0, 3), [1, 0])], ids=str)
def test_transpose(state, dtype, shape, perm):
    x = rand(shape, dtype)
    expected = np.transpose(x, perm)
    out = run(state, "transpose", [x, np.array(perm, I64)], expected.shape)
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("dtype", [F32, F16, I64, BOOL])
@pytest.mark.parametrize("shapes,axis", [([(2, 3), (4, 3)], 0), ([(2, 3), (2, 1), (2, 5)], 1),
                                         ([(2, 0, 2), (2, 3, 2)], 1), ([(7,)], 0), ([(2, 2, 1), (2, 2, 3)], 2)],
                         ids=str)
def test_concat(state, dtype, shapes, axis):
    inputs = [rand(s, dtype, seed=i) for i, s in enumerate(shapes)]
    expected = np.concatenate(inputs, axis=axis)
    out = run(state, "concat", inputs, expected.shape, ints=[axis])
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("dtype", [F32, F16, I64, BOOL])
@pytest.mark.parametrize("shape,slices", [((6,), [slice(1, 5, 2)]), ((6,), [slice(5, None, -1)]),
                                          ((4, 5), [slice(1, 3, 1), slice(4, 0, -2)]),
                                          ((3, 4, 5), [slice(0, 3, 1), slice(0, 0, 1), slice(0, 5, 1)]),
                                          ((3, 4), [slice(2, 3, 1), slice(0, 4, 3)])], ids=str)
def test_slice(state, dtype, shape, slices):
    x = rand(shape, dtype)
    expected = x[tuple(slices)]
    starts = [s.indices(d)[0] for s, d in zip(slices, shape, strict=True)]
    steps = [s.step for s in slices]
    out = run(state, "slice", [x, np.array(starts, I64), np.array(steps, I64)], expected.shape)
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("dtype", [F32, F16, I64, BOOL])
@pytest.mark.parametrize("index_dtype", [I32, I64])
@pytest.mark.parametrize("shape,axis,indices", [((5, 3), 0, [[0, 4], [-1, 2]]), ((2, 5, 3), 1, [3, -5, 0]),
                                                ((4,), 0, 2), ((2, 3), 1, []), ((3, 2), 0, [[1]])], ids=str)
def test_gather(state, dtype, index_dtype, shape, axis, indices):
    x = rand(shape, dtype)
    idx = np.array(indices, index_dtype)
    expected = np.take(x, idx, axis=axis)
    out = run(state, "gather", [x, idx], expected.shape, out_dtype=dtype, ints=[axis])
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("dtype", [F32, F16, I64, BOOL])
@pytest.mark.parametrize("shape,target", [((3, 1), (2, 3, 4)), ((), (2, 2)), ((4,), (3, 4)), ((2, 3), (2, 3)),
                                          ((1,), (0, 3))], ids=str)
def test_expand(state, dtype, shape, target):
    x = rand(shape, dtype)
    out = run(state, "expand", [x], target)
    np.testing.assert_array_equal(out, np.broadcast_to(x, target))


def test_gather_checks_every_index_before_writing(state):
    out = np.full((2, 3), 5.0, F32)
    with pytest.raises(InvalidArgumentError, match="index 9 at position 1"):
        call_raw(state, "gather", [np.ones((2, 3), F32), np.array([0, 9], I64)], [out], [0])
    assert np.all(out == 5.0)
