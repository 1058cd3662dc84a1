"""BFLOAT16 and the FLOAT8 element types of ABI 1.3 on the GPU kernels (cuda/hip backends) against the CPU
backend, bit for bit: the cast kernel both ways and between the formats, with saturate 1 and 0 (narrow_float.h
is the one conversion of both backends; test_cpu_float8_types.py checks the CPU against onnx's reference), and
the byte-generic data movement kernels. Arrays carry the bit patterns (uint16/uint8); call_kernel's dtypes
names their element type.

Run with ``pytest --gpu=auto`` (skipped when the runtime has no GPU backend or no GPU answers).
"""

from __future__ import annotations

import pytest
from gpu_util import run_both

np = pytest.importorskip("numpy")
ml_dtypes = pytest.importorskip("ml_dtypes")
rt = pytest.importorskip("hipdnn_ep_runtime")
_core = rt._core

pytestmark = [pytest.mark.gpu, pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning",
                                                          "ignore:overflow encountered:RuntimeWarning")]

DTYPE = {e["name"]: e["values"] for e in rt.abi_manifest()["enums"]}["hipdnn_ep_dtype"]
STORAGE = {"BFLOAT16": np.uint16, "FLOAT8E4M3FN": np.uint8, "FLOAT8E4M3FNUZ": np.uint8, "FLOAT8E5M2": np.uint8,
           "FLOAT8E5M2FNUZ": np.uint8}


def compare(cpu, gpu, dev, kernel, inputs, out_shape, out_dtype, ints=(), dtypes=()):
    (got,), (expected,) = run_both(cpu, gpu, dev, kernel, [np.ascontiguousarray(x) for x in inputs],
                                   [(out_shape, out_dtype)], ints, dtypes=dtypes, fill=0x55)
    if np.issubdtype(out_dtype, np.floating):
        # a NaN where the CPU gives one (a device's float conversion makes every NaN its canonical one, the
        # sign dropped), the bit patterns elsewhere (-0.0 included)
        nan = np.isnan(expected)
        np.testing.assert_array_equal(np.isnan(got), nan)
        bits = f"u{got.itemsize}"
        np.testing.assert_array_equal(got.view(bits)[~nan], expected.view(bits)[~nan])
    else:
        np.testing.assert_array_equal(got, expected)


def _probe(n=4096, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n) * rng.choice([1e-6, 1e-3, 1, 30, 500, 1e5, 1e40], n)
    x[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, 448.0, 464.0, 57344.0 * 1.2]
    return x.astype(np.float32)


@pytest.mark.parametrize("saturate", [1, 0])
@pytest.mark.parametrize("name", list(STORAGE))
@pytest.mark.parametrize("src", [np.float32, np.float16, np.float64, np.int32, np.int64, np.uint8])
def test_cast_to_narrow(cpu, gpu, dev, name, src, saturate):
    x = _probe()
    if np.issubdtype(src, np.integer):
        x = np.nan_to_num(x, posinf=0, neginf=0)
        info = np.iinfo(src)
        x = np.clip(x, max(info.min, -1e6), min(info.max, 1e6))
    x = x.astype(src)
    compare(cpu, gpu, dev, "cast", [x], x.shape, STORAGE[name], [saturate], [-1, DTYPE[name]])


@pytest.mark.parametrize("name", list(STORAGE))
@pytest.mark.parametrize("out", [np.float32, np.float16, np.float64, np.int32, np.int64, np.int8, np.bool_])
def test_cast_from_narrow(cpu, gpu, dev, name, out):
    storage = STORAGE[name]
    bits = np.arange(np.iinfo(storage).max + 1, dtype=np.int64).astype(storage)
    compare(cpu, gpu, dev, "cast", [bits], bits.shape, out, [1], [DTYPE[name], -1])


@pytest.mark.parametrize("saturate", [1, 0])
@pytest.mark.parametrize("src", list(STORAGE))
@pytest.mark.parametrize("dst", list(STORAGE))
def test_cast_between_narrow(cpu, gpu, dev, src, dst, saturate):
    bits = np.arange(np.iinfo(STORAGE[src]).max + 1, dtype=np.int64).astype(STORAGE[src])
    compare(cpu, gpu, dev, "cast", [bits], bits.shape, STORAGE[dst], [saturate], [DTYPE[src], DTYPE[dst]])


@pytest.mark.parametrize("name", list(STORAGE))
def test_transpose(cpu, gpu, dev, name):
    x = (np.arange(2 * 3 * 40, dtype=np.int64) % 200).astype(STORAGE[name]).reshape(2, 3, 40)
    compare(cpu, gpu, dev, "transpose", [x, np.array([2, 0, 1], np.int64)], (40, 2, 3), STORAGE[name],
            dtypes=[DTYPE[name], -1, DTYPE[name]])
