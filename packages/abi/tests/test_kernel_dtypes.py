"""Accepted element types of the kernels: parsed and checked from the manifest, carried by the JSON,
and generated as the runtime's C++ masks."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from conftest import set_minor
from hipdnn_ep_abi import generate, parse
from hipdnn_ep_abi.model import ManifestError

# binary's POW row and the default row of binary and reduce in the manifest, which these tests edit
POW_LINE = 'dtypes.POW = ["FLOAT32", "FLOAT16", ["INT32", 3], ["INT64", 3], ["FLOAT64", 3]]'
INT_DEFAULT = ('dtypes.default = ["FLOAT32", "FLOAT16", "INT32", "INT64", ["INT8", 3], ["UINT8", 3], ["INT16", 3], '
               '["UINT16", 3], ["UINT32", 3], ["UINT64", 3], ["FLOAT64", 3]]')

def test_rules_resolve_per_op_with_the_default(manifest):
    binary = manifest.function("hipdnn_ep_kernel_binary")
    rules = manifest.input0_dtypes(binary)
    assert rules["POW"] == ("FLOAT32", "INT32", "INT64", "FLOAT16", "FLOAT64")  # in code order
    ints = ("UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64")
    assert rules["EQUAL"] == ("FLOAT32", *ints, "BOOL", "FLOAT16", "FLOAT64", "UINT32", "UINT64")
    assert rules["ADD"] == rules["LESS"] == ("FLOAT32", *ints, "FLOAT16", "FLOAT64", "UINT32", "UINT64")
    assert set(rules) == {name for name, _ in manifest.enum("hipdnn_ep_binary_op").values}


def test_a_kernel_without_a_table_accepts_every_dtype(manifest):
    concat = manifest.function("hipdnn_ep_kernel_concat")
    assert manifest.input0_dtypes(concat) == {None: manifest.all_dtypes()}
    gather = manifest.function("hipdnn_ep_kernel_gather")
    assert manifest.later_input_dtypes(gather) == {1: ("INT32", "INT64")}


def test_json_carries_the_tables(manifest):
    kernels = {f["name"]: f for f in generate.manifest_json(manifest)["functions"] if f["kind"] == "kernel"}
    binary = kernels["hipdnn_ep_kernel_binary"]
    assert binary["op_enum"] == "hipdnn_ep_binary_op"
    assert binary["dtypes"]["POW"] == ["FLOAT32", "INT32", "INT64", "FLOAT16", "FLOAT64"]
    assert "default" in binary["dtypes"]
    assert kernels["hipdnn_ep_kernel_where"]["dtypes"] == {"default": ["BOOL"]}
    assert kernels["hipdnn_ep_kernel_slice"]["input_dtypes"] == {"1": ["INT64"], "2": ["INT64"]}
    assert kernels["hipdnn_ep_kernel_fill"]["dtypes"] == {} and kernels["hipdnn_ep_kernel_fill"]["op_enum"] is None
    functions = [f for f in generate.manifest_json(manifest)["functions"] if f["kind"] == "function"]
    assert all("dtypes" not in f for f in functions)


def test_dtype_tables_do_not_change_signature_hashes(manifest, manifest_text):
    edited = parse(manifest_text.replace(POW_LINE, 'dtypes.POW = ["FLOAT32"]'))
    for fn in manifest.functions:
        assert manifest.signature_hash(fn) == edited.signature_hash(edited.function(fn.name))


def test_generated_masks_are_internal_and_match_the_manifest(tmp_path, manifest):
    cxx = shutil.which("c++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    generate.write_all(manifest, tmp_path)
    header = tmp_path / generate.KERNEL_DTYPES_HEADER
    assert header.exists() and not header.is_relative_to(tmp_path / "include")
    source = tmp_path / "masks.cpp"
    source.write_text('#include "kernel_dtypes.h"\n'
                      "namespace dt = hipdnn_ep::kernel_dtypes;\n"
                      "static_assert(dt::binary(HIPDNN_EP_BINARY_OP_POW) == "
                      "(dt::bit(HIPDNN_EP_DTYPE_FLOAT32) | dt::bit(HIPDNN_EP_DTYPE_FLOAT16) | "
                      "dt::bit(HIPDNN_EP_DTYPE_INT32) | dt::bit(HIPDNN_EP_DTYPE_INT64) | "
                      "dt::bit(HIPDNN_EP_DTYPE_FLOAT64)));\n"
                      "static_assert(dt::accepts(dt::binary(HIPDNN_EP_BINARY_OP_EQUAL), HIPDNN_EP_DTYPE_BOOL));\n"
                      "static_assert(!dt::accepts(dt::binary(HIPDNN_EP_BINARY_OP_ADD), HIPDNN_EP_DTYPE_BOOL));\n"
                      "static_assert(dt::binary(99) == 0);\n"
                      "static_assert(dt::accepts(dt::unary(HIPDNN_EP_UNARY_OP_NEG), HIPDNN_EP_DTYPE_INT32));\n"
                      "static_assert(!dt::accepts(dt::unary(HIPDNN_EP_UNARY_OP_EXP), HIPDNN_EP_DTYPE_INT32));\n"
                      "static_assert(!dt::accepts(dt::reduce(HIPDNN_EP_REDUCE_OP_MEAN), HIPDNN_EP_DTYPE_INT64));\n"
                      "static_assert(dt::where == dt::bit(HIPDNN_EP_DTYPE_BOOL));\n"
                      "static_assert(dt::accepts(dt::cast, HIPDNN_EP_DTYPE_FLOAT64) && !dt::accepts(dt::cast, 8));\n"
                      "static_assert(dt::gather_input_1 == "
                      "(dt::bit(HIPDNN_EP_DTYPE_INT32) | dt::bit(HIPDNN_EP_DTYPE_INT64)));\n"
                      "static_assert(!dt::accepts(dt::matmul, -1) && !dt::accepts(dt::matmul, 64));\n")
    proc = subprocess.run([cxx, "-std=c++17", "-Wall", "-Werror", "-fsyntax-only", "-I", str(tmp_path / "include"),
                           "-I", str(header.parent), str(source)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("edit,message", [
    ((POW_LINE, 'dtypes.POW = ["FLOAT32", "FLOAT128"]'), "unknown dtype"),
    ((POW_LINE, 'dtypes.POW = ["FLOAT32", "FLOAT32"]'), "twice"),
    ((POW_LINE, "dtypes.POW = []"), "non-empty list"),
    ((POW_LINE, 'dtypes.NAND = ["FLOAT32"]'), "dtypes.NAND is neither default"),
    ((INT_DEFAULT + '\ndtypes.POW', 'dtypes.POW'), "needs a default"),
    (('op_enum = "hipdnn_ep_binary_op"', 'op_enum = "hipdnn_ep_binary_ops"'), "not a declared enum"),
    (('input_dtypes.1 = ["INT32", "INT64"]', 'input_dtypes.0 = ["INT32", "INT64"]'), "input index >= 1"),
    (('input_dtypes.1 = ["INT32", "INT64"]', 'input_dtypes.x = ["INT32", "INT64"]'), "input index >= 1"),
    (('int_attrs = ["op"]\nop_enum = "hipdnn_ep_reduce_op"', 'int_attrs = ["mode"]\nop_enum = "hipdnn_ep_reduce_op"'),
     "needs an int attribute named op"),
])
def test_malformed_tables_are_rejected_naming_the_kernel(manifest_text, edit, message):
    old, new = edit
    assert old in manifest_text
    with pytest.raises(ManifestError, match=message) as info:
        parse(manifest_text.replace(old, new, 1))
    assert "hipdnn_ep_kernel_" in str(info.value)


def test_an_op_key_needs_an_op_enum(manifest_text):
    fill = 'name = "hipdnn_ep_kernel_fill"\nsince = 3\nint_attrs = ["bits"]\n'
    assert fill in manifest_text
    with pytest.raises(ManifestError, match="hipdnn_ep_kernel_fill: dtypes.ADD .* no op_enum"):
        parse(manifest_text.replace(fill, fill + 'dtypes.default = ["FLOAT32"]\ndtypes.ADD = ["FLOAT32"]\n'))


def test_listing_every_op_needs_no_default(manifest_text):
    reduce_rules = INT_DEFAULT + '\ndtypes.MEAN = ["FLOAT32", "FLOAT16", ["FLOAT64", 3]]'
    assert reduce_rules in manifest_text
    # every op listed (L2, LOG_SUM and LOG_SUM_EXP already are): no default needed
    full = ('dtypes.SUM = ["FLOAT32"]\ndtypes.MEAN = ["FLOAT32", "FLOAT16"]\ndtypes.MAX = ["INT64"]\n'
            'dtypes.MIN = ["INT32"]\ndtypes.PROD = ["INT32"]\ndtypes.L1 = ["INT32"]\ndtypes.SUM_SQUARE = ["INT32"]')
    m = parse(manifest_text.replace(reduce_rules, full))
    floats = ("FLOAT32", "FLOAT16", "FLOAT64")
    assert m.input0_dtypes(m.function("hipdnn_ep_kernel_reduce")) == {
        "SUM": ("FLOAT32",), "MEAN": ("FLOAT32", "FLOAT16"), "MAX": ("INT64",), "MIN": ("INT32",), "PROD": ("INT32",),
        "L1": ("INT32",), "L2": floats, "LOG_SUM": floats, "LOG_SUM_EXP": floats, "SUM_SQUARE": ("INT32",)}


def _next_minor(manifest_text: str) -> int:
    return parse(manifest_text).minor + 1


def test_dtype_and_enum_value_since_reach_the_json(manifest_text):
    nxt = _next_minor(manifest_text)
    text = set_minor(manifest_text.replace(POW_LINE, POW_LINE[:-1] + f', ["UINT8", {nxt}]]'), nxt)
    text = text.replace('["SUM_SQUARE", 9, 3],\n]', f'["SUM_SQUARE", 9, 3], ["CUBE", 10, {nxt}],\n]')
    m = parse(text)
    binary = m.function("hipdnn_ep_kernel_binary")
    assert m.input0_since(binary, "POW", "UINT8") == nxt
    assert m.input0_since(binary, "POW", "FLOAT32") == 1
    assert m.input0_since(binary, "ADD", "FLOAT32") == 1
    data = generate.manifest_json(m)
    fn = next(f for f in data["functions"] if f["name"] == "hipdnn_ep_kernel_binary")
    assert m.input0_since(binary, "POW", "INT32") == 3
    assert fn["dtypes"]["POW"] == ["FLOAT32", "UINT8", "INT32", "INT64", "FLOAT16", "FLOAT64"]  # code order
    assert fn["dtype_since"]["POW"] == {"INT32": 3, "INT64": 3, "FLOAT64": 3, "UINT8": nxt}
    enum = next(e for e in data["enums"] if e["name"] == "hipdnn_ep_reduce_op")
    assert enum["value_since"] == {"MIN": 3, "PROD": 3, "L1": 3, "L2": 3, "LOG_SUM": 3, "LOG_SUM_EXP": 3,
                                   "SUM_SQUARE": 3, "CUBE": nxt}


@pytest.mark.parametrize(("entry", "match"), [('["UINT8", NEXT + 1]', "outside 1 .* to NEXT"),
                                              ('["UINT8", 0]', "outside 1 .* to NEXT"),
                                              ('["UINT8"]', r"dtype name or \[name, since\]")])
def test_dtype_since_is_validated(manifest_text, entry, match):
    nxt = _next_minor(manifest_text)
    entry = entry.replace("NEXT + 1", str(nxt + 1))
    match = match.replace("NEXT", str(nxt))
    text = set_minor(manifest_text.replace(POW_LINE, POW_LINE[:-1] + f", {entry}]"), nxt)
    with pytest.raises(ManifestError, match=match):
        parse(text)
