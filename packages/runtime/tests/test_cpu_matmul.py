"""The CPU matmul and gemm kernels against numpy references (kernels/cpu/matmul.cpp)."""

from __future__ import annotations

import kernel_util
import numpy as np
import pytest
from conftest import rand
from kernel_util import F16, F32, run

state = kernel_util.state  # one CPU state per module


# ---------------------------------------------------------------- matmul / gemm

MATMUL_SHAPES = [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)),
                 ((2, 1, 3, 4), (5, 4, 2)), ((3, 0), (0, 2)), ((0, 4), (4, 3)), ((2, 0, 3, 4), (4, 1)),
                 ((130, 300), (300, 270)), ((1, 2, 7, 9), (3, 1, 9, 1))]


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
def test_matmul(state, dtype, shapes):
    a = rand(shapes[0], dtype, seed=1, low=-1, high=1)
    b = rand(shapes[1], dtype, seed=2, low=-1, high=1)
    expected = np.matmul(a.astype(np.float64), b.astype(np.float64))
    out = run(state, "matmul", [a, b], expected.shape)
    tol = 1e-4 if dtype == F32 else 2e-2
    np.testing.assert_allclose(out.astype(np.float64), expected, rtol=tol, atol=tol)


# Edges of the register tiles (4 x 8, 4 x 16, 8 x 8) and of the 128 (k) x 256 (n) packed panels.
TILE_EDGE_MNK = [(1, 1, 1), (1, 8, 8), (4, 8, 8), (5, 3, 9), (3, 7, 1), (7, 129, 17), (9, 257, 33),
                 (3, 5, 257), (13, 300, 300), (128, 8, 128), (128, 128, 8), (13, 130, 12)]


@pytest.mark.parametrize("m,k,n", TILE_EDGE_MNK, ids=str)
def test_matmul_tile_and_panel_edges(state, m, k, n):
    a = rand((2, m, k), seed=m)
    b = rand((k, n), seed=n)  # broadcast over the batch
    out = run(state, "matmul", [a, b], (2, m, n))
    np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("m,k,n", TILE_EDGE_MNK[3:7], ids=str)
def test_gemm_transposed_tile_edges(state, m, k, n):
    a = rand((k, m), seed=1)
    b = rand((n, k), seed=2)
    out = run(state, "gemm", [a, b], (m, n), ints=[1, 1], floats=[1.0, 0.0])
    np.testing.assert_allclose(out, a.T.astype(np.float64) @ b.T, rtol=1e-5, atol=1e-4)


def test_matmul_non_finite_stays_in_its_row_and_column(state):
    # The tile's zero padding multiplies real entries too: an inf must not leak into other outputs.
    a = rand((5, 9))
    b = rand((9, 11), seed=1)
    a[4, 2] = np.inf
    b[3, 10] = np.nan
    out = run(state, "matmul", [a, b], (5, 11))
    with np.errstate(invalid="ignore"):
        expected = a.astype(np.float64) @ b
    np.testing.assert_array_equal(np.isfinite(out), np.isfinite(expected))
    finite = np.isfinite(expected)
    np.testing.assert_allclose(out[finite], expected[finite], rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("trans_a", [0, 1])
@pytest.mark.parametrize("trans_b", [0, 1])
@pytest.mark.parametrize("c_shape", [None, (5,), (3, 1), (1,), (3, 5), ()], ids=str)
def test_gemm(state, dtype, trans_a, trans_b, c_shape):
    m, k, n = 3, 300, 5
    a = rand((k, m) if trans_a else (m, k), dtype, seed=1, low=-1, high=1)
    b = rand((n, k) if trans_b else (k, n), dtype, seed=2, low=-1, high=1)
    alpha, beta = 0.5, -2.0
    op_a = (a.T if trans_a else a).astype(np.float64)
    op_b = (b.T if trans_b else b).astype(np.float64)
    expected = alpha * op_a @ op_b
    inputs = [a, b]
    if c_shape is not None:
        c = rand(c_shape, dtype, seed=3)
        inputs.append(c)
        expected = expected + beta * c.astype(np.float64)
    out = run(state, "gemm", inputs, (m, n), ints=[trans_a, trans_b], floats=[alpha, beta])
    tol = 1e-4 if dtype == F32 else 2e-2
    np.testing.assert_allclose(out.astype(np.float64), expected, rtol=tol, atol=tol)


def test_gemm_ignores_c_when_beta_is_zero(state):
    a = rand((2, 3))
    b = rand((3, 4), seed=1)
    c = np.full((2, 4), np.nan, F32)
    out = run(state, "gemm", [a, b, c], (2, 4), ints=[0, 0], floats=[1.0, 0.0])
    np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-5)


def test_gemm_with_zero_k_is_beta_c(state):
    a = np.zeros((2, 0), F32)
    b = np.zeros((0, 3), F32)
    c = rand((3,))
    out = run(state, "gemm", [a, b, c], (2, 3), ints=[0, 0], floats=[1.0, 3.0])
    np.testing.assert_allclose(out, np.broadcast_to(3 * c, (2, 3)), rtol=1e-6)
