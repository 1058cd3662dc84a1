"""The CPU kernels of kernels/cpu/general.cpp (arg_reduce, top_k, scatter_nd, gather_nd,
scatter_elements, pad) against numpy references."""

from __future__ import annotations

import kernel_util
import numpy as np
import pytest
from conftest import rand
from kernel_util import BOOL, F16, F32, I32, I64, InvalidArgumentError, _core, call_raw, rng, rt, run

state = kernel_util.state  # one CPU state per module


# ---------------------------------------------------------------- ArgMax/ArgMin, ScatterND, Pad

def _arg_ref(x, axis, is_min, last):
    f = np.argmin if is_min else np.argmax
    if not last:
        return f(x, axis=axis)
    flipped = np.flip(x, axis=axis)
    return x.shape[axis] - 1 - f(flipped, axis=axis)


@pytest.mark.parametrize("dtype", [F32, F16, I32, I64])
@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("is_min", [0, 1])
@pytest.mark.parametrize("last", [0, 1])
def test_arg_reduce(state, dtype, axis, is_min, last):
    x = rand((3, 4, 5), dtype, low=-3, high=3).astype(dtype)  # small integers: ties
    x = np.round(x).astype(dtype)
    want = _arg_ref(x, axis, is_min, last)
    out = run(state, "arg_reduce", [x], want.shape, out_dtype=I64, ints=[axis, last, is_min])
    np.testing.assert_array_equal(out, want)
    kept = run(state, "arg_reduce", [x], np.expand_dims(want, axis).shape, out_dtype=I64, ints=[axis, last, is_min])
    np.testing.assert_array_equal(kept, np.expand_dims(want, axis))


def test_arg_reduce_nan_is_the_extreme(state):
    x = np.array([[1, np.nan, 3, np.nan]], F32)
    for is_min in (0, 1):
        assert run(state, "arg_reduce", [x], (1,), out_dtype=I64, ints=[1, 0, is_min])[0] == 1
        assert run(state, "arg_reduce", [x], (1,), out_dtype=I64, ints=[1, 1, is_min])[0] == 3


def test_arg_reduce_refuses_an_empty_axis(state):
    with pytest.raises(InvalidArgumentError, match="is empty"):
        run(state, "arg_reduce", [np.zeros((2, 0), F32)], (2,), out_dtype=I64, ints=[1, 0, 0])


def _scatter_nd_ref(data, idx, upd, reduction):
    out = data.copy()
    k = idx.shape[-1]
    flat_idx = idx.reshape(-1, k)
    flat_upd = upd.reshape((flat_idx.shape[0],) + data.shape[k:])
    for i, t in enumerate(flat_idx):
        t = tuple(int(c) + data.shape[d] if c < 0 else int(c) for d, c in enumerate(t))
        if reduction == 0:
            out[t] = flat_upd[i]
        elif reduction == 1:
            out[t] = out[t] + flat_upd[i]
        elif reduction == 2:
            out[t] = out[t] * flat_upd[i]
        elif reduction == 3:
            out[t] = np.maximum(out[t], flat_upd[i])
        else:
            out[t] = np.minimum(out[t], flat_upd[i])
    return out


@pytest.mark.parametrize("dtype", [F32, F16, I32, I64])
@pytest.mark.parametrize("reduction", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_scatter_nd(state, dtype, reduction, k):
    data = np.round(rand((3, 4, 5), dtype, low=-4, high=4)).astype(dtype)
    idx = np.array([[-1, 2, 0], [0, 1, 4], [0, 1, 4], [2, -4, 3]], I64)[:, :k]  # repeats: reductions in order
    if reduction == 0:
        idx = idx[[0, 1, 3]]
    upd = np.round(rand((idx.shape[0],) + data.shape[k:], dtype, low=-4, high=4, seed=3)).astype(dtype)
    out = run(state, "scatter_nd", [data, idx, upd], data.shape, ints=[reduction])
    np.testing.assert_array_equal(out, _scatter_nd_ref(data, idx, upd, reduction))


def test_scatter_nd_bool_replaces(state):
    data = np.zeros((2, 3), BOOL)
    out = run(state, "scatter_nd", [data, np.array([[1, 2]], I64), np.array([True])], data.shape, ints=[0])
    np.testing.assert_array_equal(out, [[False] * 3, [False, False, True]])
    with pytest.raises(rt.HipdnnEpError, match="does not take BOOL"):
        run(state, "scatter_nd", [data, np.array([[1, 2]], I64), np.array([True])], data.shape, ints=[1])


def test_scatter_nd_checks_every_index_before_writing(state):
    out = np.full((2, 3), 5.0, F32)
    upd = np.ones((2,), F32)
    with pytest.raises(InvalidArgumentError, match="index 3 of index tuple 1 is out of range for axis 1 of size 3"):
        call_raw(state, "scatter_nd", [np.zeros((2, 3), F32), np.array([[0, 0], [1, 3]], I64), upd], [out], [0])
    assert np.all(out == 5.0)
    with pytest.raises(InvalidArgumentError, match="index -3 of index tuple 0"):
        call_raw(state, "scatter_nd", [np.zeros((2, 3), F32), np.array([[-3]], I64), np.ones((1, 3), F32)], [out], [1])
    with pytest.raises(InvalidArgumentError, match="updates dims"):
        call_raw(state, "scatter_nd", [np.zeros((2, 3), F32), np.array([[0]], I64), np.ones((1, 2), F32)], [out], [0])


def _gather_nd_ref(data, idx, b):
    batches = int(np.prod(data.shape[:b], dtype=np.int64))
    flat = data.reshape((batches,) + data.shape[b:])
    k = idx.shape[-1]
    tuples = idx.reshape(batches, -1, k)
    out = [flat[n][tuple(t)] for n in range(batches) for t in tuples[n]]
    return np.array(out, data.dtype).reshape(idx.shape[:-1] + data.shape[b + k:])


@pytest.mark.parametrize("dtype", [F32, F16, I64, BOOL])
@pytest.mark.parametrize("b,k", [(0, 1), (0, 2), (0, 3), (1, 1), (1, 2), (2, 1)])
def test_gather_nd(state, dtype, b, k):
    data = rand((2, 3, 4), dtype)
    r = rng(b * 3 + k)
    idx = np.stack([r.integers(-data.shape[b + d], data.shape[b + d], size=data.shape[:b] + (5,))
                    for d in range(k)], axis=-1).astype(I64)
    want = _gather_nd_ref(data, idx, b)
    out = run(state, "gather_nd", [data, idx], want.shape, ints=[b])
    np.testing.assert_array_equal(out, want)


def test_gather_nd_checks_every_index(state):
    with pytest.raises(InvalidArgumentError, match="index 4 of index tuple 1 is out of range for axis 1 of size 4"):
        run(state, "gather_nd", [np.ones((2, 4), F32), np.array([[0, 0], [1, 4]], I64)], (2,), ints=[0])
    with pytest.raises(InvalidArgumentError, match="differ in batch dim 0"):
        run(state, "gather_nd", [np.ones((2, 4), F32), np.zeros((3, 1), I64)], (3,), ints=[1])


def _scatter_elements_ref(data, idx, upd, axis, reduction):
    out = data.copy()
    combine = [lambda a, b: b, np.add, np.multiply, np.maximum, np.minimum][reduction]
    for pos in np.ndindex(*idx.shape):
        at = list(pos)
        at[axis] = int(idx[pos]) % data.shape[axis]
        out[tuple(at)] = combine(out[tuple(at)], upd[pos])
    return out


@pytest.mark.parametrize("dtype", [F32, F16, I32, I64])
@pytest.mark.parametrize("index_dtype", [I32, I64])
@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("reduction", [0, 1, 2, 3, 4])
def test_scatter_elements(state, dtype, index_dtype, axis, reduction):
    data = np.round(rand((3, 4, 5), dtype, low=-4, high=4)).astype(dtype)
    shape = [2, 3, 4]
    shape[axis] = 3
    r = rng(axis)
    if reduction == 0:  # no repeats along the axis: without a reduction their order is the model's business
        idx = np.moveaxis(np.broadcast_to(np.arange(3)[:, None, None], [3] + [s for d, s in enumerate(shape)
                                                                               if d != axis]), 0, axis)
        idx = np.where(r.random(idx.shape) < 0.5, idx - data.shape[axis], idx)
    else:
        idx = r.integers(-data.shape[axis], data.shape[axis], size=shape)
    idx = np.ascontiguousarray(idx).astype(index_dtype)
    upd = np.round(rand(tuple(shape), dtype, low=-3, high=3, seed=4)).astype(dtype)
    out = run(state, "scatter_elements", [data, idx, upd], data.shape, ints=[axis, reduction])
    np.testing.assert_array_equal(out, _scatter_elements_ref(data, idx, upd, axis, reduction))


def test_scatter_elements_checks_every_index_before_writing(state):
    out = np.full((2, 3), 5.0, F32)
    with pytest.raises(InvalidArgumentError, match="index 3 at position 1 is out of range for axis 1 of size 3"):
        call_raw(state, "scatter_elements", [np.zeros((2, 3), F32), np.array([[0, 3]], I64), np.ones((1, 2), F32)],
                 [out], [1, 0])
    assert np.all(out == 5.0)
    with pytest.raises(InvalidArgumentError, match="updates dims"):
        call_raw(state, "scatter_elements", [np.zeros((2, 3), F32), np.array([[0, 1]], I64), np.ones((1, 3), F32)],
                 [out], [1, 0])


PAD_MODES = {0: "constant", 1: "reflect", 2: "edge", 3: "wrap"}


@pytest.mark.parametrize("dtype", [F32, F16, I64, BOOL])
@pytest.mark.parametrize("mode", sorted(PAD_MODES))
@pytest.mark.parametrize("pads", [[0, 1, 2, 1, 0, 3], [1, 0, 0, 0, 2, 1], [0, 0, 0, 0, 0, 0]], ids=str)
def test_pad(state, dtype, mode, pads):
    x = rand((2, 3, 4), dtype)
    value = np.array(rand((), dtype, seed=5))
    width = [(pads[d], pads[d + 3]) for d in range(3)]
    kw = {"constant_values": value} if mode == 0 else {}
    want = np.pad(x, width, mode=PAD_MODES[mode], **kw)
    out = run(state, "pad", [x, value.reshape(1), np.array(pads, I64)], want.shape, ints=[mode])
    np.testing.assert_array_equal(out, want)


def test_pad_wraps_more_than_the_axis_and_crops(state):
    x = np.arange(6, dtype=F32).reshape(2, 3)
    out = run(state, "pad", [x, np.zeros(1, F32), np.array([0, 4, 0, 3], I64)], (2, 10), ints=[3])
    np.testing.assert_array_equal(out, np.pad(x, [(0, 0), (4, 3)], mode="wrap"))
    out = run(state, "pad", [x, np.full(1, 9, F32), np.array([-1, 1, 0, -2], I64)], (1, 2), ints=[0])
    np.testing.assert_array_equal(out, [[9, 3]])


def test_pad_refuses_bad_pads(state):
    x = np.ones((2, 3), F32)
    with pytest.raises(InvalidArgumentError, match="must be below the axis size"):
        run(state, "pad", [x, np.zeros(1, F32), np.array([0, 3, 0, 0], I64)], (2, 6), ints=[1])
    with pytest.raises(InvalidArgumentError, match="pads has 2 entries"):
        run(state, "pad", [x, np.zeros(1, F32), np.array([0, 3], I64)], (2, 6), ints=[0])
    with pytest.raises(InvalidArgumentError, match="need elements to copy"):
        run(state, "pad", [np.ones((2, 0), F32), np.zeros(1, F32), np.array([0, 1, 0, 0], I64)], (2, 1), ints=[2])



def top_k(state, x, k, axis, largest=1, sorted_=1, values_shape=None, indices_dtype=I64):
    shape = list(x.shape)
    shape[axis] = k
    values = np.full(values_shape or shape, 77, dtype=x.dtype)
    indices = np.full(shape, 77, dtype=indices_dtype)
    _core.call_kernel(state, "hipdnn_ep_kernel_top_k", [np.array(x, order="C")], [values, indices],
                      [axis, largest, sorted_], [])
    return values, indices


def top_k_ref(x, k, axis, largest):
    """Best first, equal values in index order, NaN larger than any number."""
    moved = np.moveaxis(x, axis, -1)
    if np.issubdtype(x.dtype, np.floating):
        nan = np.isnan(moved).astype(np.int64)
        val = np.where(nan == 1, 0, moved).astype(np.float64)
        order = np.lexsort((-val, -nan) if largest else (val, nan), axis=-1)
    else:
        key = moved.astype(np.int64)
        order = np.argsort(-key if largest else key, axis=-1, kind="stable")
    idx = order[..., :k]
    return np.moveaxis(np.take_along_axis(moved, idx, -1), -1, axis), np.moveaxis(idx, -1, axis)


@pytest.mark.parametrize("dtype", [F32, F16, I32, I64])
@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("largest", [0, 1])
def test_top_k(state, dtype, axis, largest):
    x = np.round(rand((4, 9, 5), dtype, low=-3, high=3)).astype(dtype)  # ties
    if np.issubdtype(dtype, np.floating):
        x.flat[::7] = np.nan
    for k in (0, 1, 3, x.shape[axis]):
        values, indices = top_k(state, x, k, axis, largest)
        want_v, want_i = top_k_ref(x, k, axis, largest)
        np.testing.assert_array_equal(indices, want_i)
        np.testing.assert_array_equal(values, want_v)


def test_top_k_checks_its_arguments(state):
    x = np.ones((2, 4), F32)
    with pytest.raises(InvalidArgumentError, match=r"k is 5 but axis 1 of input dims \[2, 4\] has only 4 elements"):
        top_k(state, x, 5, 1)
    with pytest.raises(InvalidArgumentError, match="axis 2 is out of range for rank 2"):
        _core.call_kernel(state, "hipdnn_ep_kernel_top_k", [x], [np.ones((2, 4), F32), np.ones((2, 4), I64)],
                          [2, 1, 1], [])
    with pytest.raises(InvalidArgumentError, match="largest and sorted must be 0 or 1, got 2"):
        top_k(state, x, 2, 1, largest=2)
    with pytest.raises(InvalidArgumentError, match="output 1 \\(indices\\) has dtype INT32, expected INT64"):
        top_k(state, x, 2, 1, indices_dtype=I32)
    with pytest.raises(InvalidArgumentError, match=r"output 1 has dims \[2, 2\], expected \[2, 3\]"):
        top_k(state, x, 2, 1, values_shape=[2, 3])
    with pytest.raises(InvalidArgumentError, match="expected 2 outputs, got 1"):
        _core.call_kernel(state, "hipdnn_ep_kernel_top_k", [x], [np.ones((2, 2), F32)], [1, 1, 1], [])
    with pytest.raises(RuntimeError, match="top_k does not support dtype BOOL"):
        top_k(state, np.ones((2, 4), BOOL), 2, 1)
    with pytest.raises(InvalidArgumentError, match="TopK needs at least 1"):
        _core.call_kernel(state, "hipdnn_ep_kernel_top_k", [np.ones((), F32)], [np.ones((), F32), np.ones((), I64)],
                          [0, 1, 1], [])
