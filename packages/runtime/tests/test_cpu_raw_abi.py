"""The CPU kernels' C entry points called directly (ctypes), to reach what the testing hook cannot:
NULL pointers, a short struct, garbage tensor refs. Struct layouts come from the runtime's manifest."""

from __future__ import annotations

import ctypes

import hipdnn_ep_runtime as rt
import numpy as np
import pytest
from kernel_util import DTYPE, F32, MANIFEST, STATUS, UNARY

# ---------------------------------------------------------------- the raw C ABI (ctypes)

_CTYPES = {"uint64_t": ctypes.c_uint64, "int64_t": ctypes.c_int64, "int32_t": ctypes.c_int32,
           "uint32_t": ctypes.c_uint32}


def _struct(name):
    """A ctypes Structure with the manifest's layout of struct `name` (pointers as void*)."""
    spec = next(s for s in MANIFEST["structs"] if s["name"] == name)
    fields = [(f["name"], ctypes.c_void_p if f["type"].endswith("*") else _CTYPES[f["type"]]) for f in spec["fields"]]
    cls = type(name, (ctypes.Structure,), {"_fields_": fields})
    assert ctypes.sizeof(cls) == spec["size"]
    for f in spec["fields"]:
        assert getattr(cls, f["name"]).offset == f["offset"]
    return cls


class RawAbi:
    TensorRef = _struct("hipdnn_ep_tensor_ref_t")
    Args = _struct("hipdnn_ep_kernel_args_t")

    def __init__(self):
        lib = ctypes.CDLL(rt.library_path())
        lib.hipdnn_ep_last_error.restype = ctypes.c_char_p
        lib.hipdnn_ep_state_create.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
        lib.hipdnn_ep_state_destroy.argtypes = [ctypes.c_void_p]
        self.lib = lib
        self.keep = []

    def kernel(self, name):
        fn = getattr(self.lib, "hipdnn_ep_kernel_" + name)
        fn.restype = ctypes.c_int32
        fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        return fn

    def ref(self, array, dtype_code=None, rank=None, dims=None, data="array"):
        dims_arr = (ctypes.c_int64 * max(array.ndim, 1))(*(dims if dims is not None else array.shape))
        self.keep += [array, dims_arr]
        return self.TensorRef(array.ctypes.data if data == "array" else data, ctypes.addressof(dims_arr),
                              array.ndim if rank is None else rank,
                              DTYPE["FLOAT32"] if dtype_code is None else dtype_code)

    def args(self, in_refs, out_refs, ints=(), floats=(), **override):
        """Address of a kernel args struct; keyword arguments overwrite its fields."""
        ins = (self.TensorRef * max(len(in_refs), 1))(*in_refs)
        outs = (self.TensorRef * max(len(out_refs), 1))(*out_refs)
        ia = (ctypes.c_int64 * max(len(ints), 1))(*ints)
        fa = (ctypes.c_double * max(len(floats), 1))(*floats)
        self.keep += [ins, outs, ia, fa]
        a = self.Args(ctypes.sizeof(self.Args), ctypes.addressof(ins), ctypes.addressof(outs), ctypes.addressof(ia),
                      ctypes.addressof(fa), len(in_refs), len(out_refs), len(ints), len(floats))
        for k, v in override.items():
            setattr(a, k, v)
        self.keep.append(a)
        return ctypes.addressof(a)


@pytest.fixture()
def raw():
    abi = RawAbi()
    ptr = ctypes.c_void_p()
    assert abi.lib.hipdnn_ep_state_create(None, ctypes.byref(ptr)) == STATUS["OK"]
    abi.state = ptr.value
    yield abi
    abi.lib.hipdnn_ep_state_destroy(ptr)


def _expect(raw, rc, status, message):
    assert rc == STATUS[status]
    text = raw.lib.hipdnn_ep_last_error().decode()
    assert text.startswith("hipdnn_ep_kernel_unary: ") and message in text, text


def _unary_args(raw, x_ref=None, y_ref=None, **override):
    x = np.ones((2, 3), F32)
    y = np.empty((2, 3), F32)
    return raw.args([x_ref or raw.ref(x)], [y_ref or raw.ref(y)], [UNARY["NEG"]], **override)


def test_raw_good_call_works(raw):
    x = -np.arange(6, dtype=F32).reshape(2, 3)
    y = np.empty_like(x)
    args = raw.args([raw.ref(x)], [raw.ref(y)], [UNARY["NEG"]])
    assert raw.kernel("unary")(raw.state, args) == STATUS["OK"]
    np.testing.assert_array_equal(y, -x)


def test_raw_null_args_and_state(raw):
    _expect(raw, raw.kernel("unary")(raw.state, None), "INVALID_ARGUMENT", "args is NULL")
    _expect(raw, raw.kernel("unary")(None, _unary_args(raw)), "INVALID_ARGUMENT", "state is NULL")


def test_raw_short_struct(raw):
    rc = raw.kernel("unary")(raw.state, _unary_args(raw, struct_size=8))
    _expect(raw, rc, "INVALID_ARGUMENT", "struct_size is 8, expected at least 56")


@pytest.mark.parametrize("field,message", [("inputs", "inputs is NULL"), ("outputs", "outputs is NULL"),
                                           ("int_attrs", "int_attrs is NULL")])
def test_raw_null_arrays(raw, field, message):
    _expect(raw, raw.kernel("unary")(raw.state, _unary_args(raw, **{field: None})), "INVALID_ARGUMENT", message)


def test_raw_null_float_attrs(raw):
    x = np.ones((2, 3), F32)
    args = raw.args([raw.ref(x), raw.ref(np.ones(3, F32))], [raw.ref(np.empty((2, 3), F32))], [1], [1e-5],
                    float_attrs=None)
    rc = raw.kernel("layer_norm")(raw.state, args)
    assert rc == STATUS["INVALID_ARGUMENT"]
    assert raw.lib.hipdnn_ep_last_error().decode() == "hipdnn_ep_kernel_layer_norm: float_attrs is NULL"


def test_raw_bad_tensor_refs(raw):
    x = np.ones((2, 3), F32)
    unary = raw.kernel("unary")
    _expect(raw, unary(raw.state, _unary_args(raw, x_ref=raw.ref(x, data=None))), "INVALID_ARGUMENT",
            "input 0 has [2, 3] elements but data is NULL")
    _expect(raw, unary(raw.state, _unary_args(raw, x_ref=raw.ref(x, data=None, rank=-1))), "INVALID_ARGUMENT",
            "input 0 is absent but required")
    _expect(raw, unary(raw.state, _unary_args(raw, x_ref=raw.ref(x, dims=[2, -3]))), "INVALID_ARGUMENT",
            "input 0 has negative dim -3 at axis 1")
    _expect(raw, unary(raw.state, _unary_args(raw, x_ref=raw.ref(x, rank=1000))), "INVALID_ARGUMENT",
            "input 0 has rank 1000")
    _expect(raw, unary(raw.state, _unary_args(raw, y_ref=raw.ref(x, dtype_code=42))), "UNSUPPORTED",
            "output 0 has unknown dtype 42")
    _expect(raw, unary(raw.state, _unary_args(raw, x_ref=raw.ref(x, dims=[1 << 62, 8]))), "INVALID_ARGUMENT",
            "overflow")
    bad_dims = raw.TensorRef(x.ctypes.data, None, 2, DTYPE["FLOAT32"])
    _expect(raw, unary(raw.state, _unary_args(raw, x_ref=bad_dims)), "INVALID_ARGUMENT", "dims is NULL")


def test_raw_empty_tensor_may_have_null_data(raw):
    x = np.ones((0, 3), F32)
    args = raw.args([raw.ref(x, data=None)], [raw.ref(x, data=None)], [UNARY["NEG"]])
    assert raw.kernel("unary")(raw.state, args) == STATUS["OK"]
