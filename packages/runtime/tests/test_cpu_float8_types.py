"""BFLOAT16 and the FLOAT8 element types of ABI 1.3 (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ) on the CPU kernels:
the cast kernel against onnx's reference conversions (ml_dtypes: Cast with saturate=1 is a clip to the format's
finite range then the conversion, saturate=0 the plain conversion), bit for bit (any NaN for a NaN), and the
byte-generic data movement kernels. numpy cannot hand these types to the runtime, so the arrays carry their bit
patterns (uint16/uint8) and call_kernel's dtypes names their element type."""

from __future__ import annotations

import pytest

np = pytest.importorskip("numpy")
ml_dtypes = pytest.importorskip("ml_dtypes")
rt = pytest.importorskip("hipdnn_ep_runtime")
_core = rt._core

MANIFEST = rt.abi_manifest()
DTYPE = {e["name"]: e["values"] for e in MANIFEST["enums"]}["hipdnn_ep_dtype"]
InvalidArgumentError = rt.InvalidArgumentError

BACKEND = "cpu"
# numpy warns converting NaN and out-of-range values between these types: they are the cases under test
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning",
                                        "ignore:overflow encountered:RuntimeWarning")

# name -> (ml_dtypes type, storage type of its bit patterns, saturate applies)
FORMATS = {
    "BFLOAT16": (ml_dtypes.bfloat16, np.uint16, False),
    "FLOAT8E4M3FN": (ml_dtypes.float8_e4m3fn, np.uint8, True),
    "FLOAT8E4M3FNUZ": (ml_dtypes.float8_e4m3fnuz, np.uint8, True),
    "FLOAT8E5M2": (ml_dtypes.float8_e5m2, np.uint8, True),
    "FLOAT8E5M2FNUZ": (ml_dtypes.float8_e5m2fnuz, np.uint8, True),
}
F8 = [n for n in FORMATS if n != "BFLOAT16"]


@pytest.fixture(scope="module")
def state():
    s = rt.State(backend=BACKEND)
    yield s
    s.close()


def to_device(x):
    return x


def to_host(x):
    return x


def call(state, kernel, inputs, outputs, ints=(), dtypes=()):
    inputs = [to_device(np.ascontiguousarray(x)) for x in inputs]
    outputs = [to_device(o) for o in outputs]
    _core.call_kernel(state, "hipdnn_ep_kernel_" + kernel, inputs, outputs, list(ints), [], list(dtypes))
    return [to_host(o) for o in outputs]


def cast(state, x, out_name_or_dtype, saturate=None, in_name=None):
    """Casts x (numpy array, or bit patterns of in_name) to a numpy dtype or a narrow format's bit patterns."""
    ints = [] if saturate is None else [int(saturate)]
    in_code = DTYPE[in_name] if in_name else -1
    if isinstance(out_name_or_dtype, str):
        out = np.full(x.shape, 0x55, dtype=FORMATS[out_name_or_dtype][1])
        out_code = DTYPE[out_name_or_dtype]
    else:
        out = np.full(x.shape, 77, dtype=out_name_or_dtype)
        out_code = -1
    return call(state, "cast", [x], [out], ints, [in_code, out_code])[0]


def reference(x, name, saturate):
    """onnx's reference Cast (onnx.reference.ops.op_cast.cast_to) to a narrow format, as bit patterns."""
    ml, storage, saturating = FORMATS[name]
    if saturate and saturating:
        info = ml_dtypes.finfo(ml)
        x = np.clip(x, float(info.min), float(info.max))
    return x.astype(ml).view(storage)


def assert_same_bits(got, want, name):
    ml, storage, _ = FORMATS[name]
    got_f = got.view(ml).astype(np.float32)
    want_f = want.view(ml).astype(np.float32)
    nan = np.isnan(want_f)
    np.testing.assert_array_equal(np.isnan(got_f), nan)
    np.testing.assert_array_equal(got[~nan], want[~nan])


def probe_values(name):
    """Zeros, infinities, NaN, the extremes, values around them and around every rounding point, subnormals."""
    ml = FORMATS[name][0]
    codes = np.arange(256 if FORMATS[name][1] is np.uint8 else 65536, dtype=FORMATS[name][1])
    finite = codes.view(ml).astype(np.float64)
    finite = np.unique(finite[np.isfinite(finite)])
    mids = (finite[:-1] + finite[1:]) / 2  # ties: round to even
    info = ml_dtypes.finfo(ml)
    big = float(info.max)
    rng = np.random.default_rng(5)
    values = [
        finite, mids, np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf),
        [0.0, -0.0, np.inf, -np.inf, np.nan, big * 1.01, -big * 1.01, big * 1.5, big * 4, -big * 4, 1e30, -1e30,
         float(info.smallest_subnormal) / 2, -float(info.smallest_subnormal) / 2,
         float(info.smallest_subnormal) * 0.51, 1e-30, -1e-30],
        rng.standard_normal(2000) * rng.choice([1e-3, 1, 30, 1e3, 1e5], 2000),
    ]
    return np.concatenate([np.asarray(v, dtype=np.float64).ravel() for v in values]).astype(np.float32)


def test_the_new_dtypes_have_their_onnx_codes():
    assert {k: DTYPE[k] for k in FORMATS} == {"BFLOAT16": 16, "FLOAT8E4M3FN": 17, "FLOAT8E4M3FNUZ": 18,
                                               "FLOAT8E5M2": 19, "FLOAT8E5M2FNUZ": 20}
    assert "FLOAT4E2M1" not in DTYPE  # two values a byte: not an ABI dtype
    sizes = {e["name"]: e for e in MANIFEST["enums"]}["hipdnn_ep_dtype"]["element_bytes"]
    assert {k: sizes[k] for k in FORMATS} == {"BFLOAT16": 2, "FLOAT8E4M3FN": 1, "FLOAT8E4M3FNUZ": 1,
                                               "FLOAT8E5M2": 1, "FLOAT8E5M2FNUZ": 1}


@pytest.mark.parametrize("saturate", [1, 0])
@pytest.mark.parametrize("name", list(FORMATS))
def test_float32_to_narrow_matches_onnx(state, name, saturate):
    x = probe_values(name)
    assert_same_bits(cast(state, x, name, saturate), reference(x, name, saturate), name)


@pytest.mark.parametrize("name", list(FORMATS))
def test_saturate_absent_is_saturate_1(state, name):
    x = probe_values(name)
    assert_same_bits(cast(state, x, name, None), reference(x, name, True), name)


@pytest.mark.parametrize("name", F8)
def test_saturate_edges(state, name):
    ml = FORMATS[name][0]
    big = float(ml_dtypes.finfo(ml).max)
    x = np.array([np.inf, -np.inf, big * 2, -big * 2], dtype=np.float32)
    sat = cast(state, x, name, 1).view(ml).astype(np.float32)
    np.testing.assert_array_equal(sat, [big, -big, big, -big])
    plain = cast(state, x, name, 0).view(ml).astype(np.float32)
    if name == "FLOAT8E5M2":
        np.testing.assert_array_equal(plain, [np.inf, -np.inf, np.inf, -np.inf])
    else:
        assert np.isnan(plain).all()
    if name.endswith("FNUZ"):  # no negative zero, one NaN (0x80)
        assert cast(state, np.array([-0.0, -1e-30, np.nan], np.float32), name, 1).tolist() == [0, 0, 0x80]


@pytest.mark.parametrize("name", list(FORMATS))
@pytest.mark.parametrize("out", [np.float32, np.float16, np.float64, np.int32, np.int64, np.uint8, np.int8, np.bool_])
def test_every_pattern_to_numeric(state, name, out):
    ml, storage, _ = FORMATS[name]
    bits = np.arange(np.iinfo(storage).max + 1, dtype=np.int64).astype(storage)
    got = cast(state, bits, out, in_name=name)
    exact = bits.view(ml).astype(np.float64)
    if np.issubdtype(out, np.integer):
        finite = np.isfinite(exact)
        info = np.iinfo(out)
        # the runtime's float -> int rule: truncate, saturate at the type's range
        want = np.array([min(max(int(v), int(info.min)), int(info.max)) for v in exact[finite]], dtype=out)
        np.testing.assert_array_equal(got[finite], want)
    elif out is np.bool_:
        np.testing.assert_array_equal(got, exact != 0)  # NaN -> true
    else:
        np.testing.assert_array_equal(got, exact.astype(out))


@pytest.mark.parametrize("name", list(FORMATS))
@pytest.mark.parametrize("src", [np.float16, np.float64, np.int32, np.int64, np.uint8, np.int16, np.bool_])
def test_numeric_to_narrow_matches_onnx(state, name, src):
    rng = np.random.default_rng(3)
    if src is np.bool_:
        x = rng.integers(0, 2, 64).astype(np.bool_)
    elif np.issubdtype(src, np.integer):
        info = np.iinfo(src)
        x = np.concatenate([rng.integers(max(info.min, -1000), min(info.max, 1000), 200),
                            [info.min, info.max, 0, 1, 17, 240, 448]]).astype(src)
    else:
        x = np.concatenate([probe_values(name).astype(np.float64), rng.standard_normal(200) * 300]).astype(src)
    for saturate in (1, 0):
        assert_same_bits(cast(state, x, name, saturate), reference(x.astype(np.float64), name, saturate), name)


@pytest.mark.parametrize("src", list(FORMATS))
@pytest.mark.parametrize("dst", list(FORMATS))
def test_narrow_to_narrow(state, src, dst):
    ml, storage, _ = FORMATS[src]
    bits = np.arange(np.iinfo(storage).max + 1, dtype=np.int64).astype(storage)
    for saturate in (1, 0):
        got = cast(state, bits, dst, saturate, in_name=src)
        assert_same_bits(got, reference(bits.view(ml).astype(np.float64), dst, saturate), dst)


def test_saturate_must_be_0_or_1(state):
    with pytest.raises(InvalidArgumentError, match="saturate must be 0 or 1, got 2"):
        cast(state, np.ones(3, np.float32), "FLOAT8E4M3FN", 2)


def test_dtypes_override_must_match_the_array_element_size(state):
    with pytest.raises(InvalidArgumentError, match="2-byte elements, its array 1"):
        call(state, "cast", [np.ones(3, np.float32)], [np.zeros(3, np.uint8)], [1], [-1, DTYPE["BFLOAT16"]])


@pytest.mark.parametrize("name", list(FORMATS))
def test_data_movement_kernels_take_the_types(state, name):
    storage = FORMATS[name][1]
    code = DTYPE[name]
    x = np.arange(24, dtype=np.int64).astype(storage).reshape(2, 3, 4) + 1
    (t,) = call(state, "transpose", [x, np.array([2, 0, 1], np.int64)], [np.zeros((4, 2, 3), storage)],
                dtypes=[code, -1, code])
    np.testing.assert_array_equal(t, x.transpose(2, 0, 1))
    (c,) = call(state, "concat", [x, x], [np.zeros((2, 6, 4), storage)], [1], dtypes=[code, code, code])
    np.testing.assert_array_equal(c, np.concatenate([x, x], 1))
    (g,) = call(state, "gather", [x, np.array([2, 0], np.int64)], [np.zeros((2, 2, 4), storage)], [1],
                dtypes=[code, -1, code])
    np.testing.assert_array_equal(g, x[:, [2, 0]])
    (e,) = call(state, "expand", [x[:1]], [np.zeros((3, 3, 4), storage)], dtypes=[code, code])
    np.testing.assert_array_equal(e, np.broadcast_to(x[:1], (3, 3, 4)))
