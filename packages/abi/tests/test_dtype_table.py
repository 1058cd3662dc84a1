"""The one dtype table: the dtype enum's element_bytes, generated into the header (HIPDNN_EP_DTYPES)
and the JSON, where the runtime, the EP and the compiler read element sizes and names."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from hipdnn_ep_abi import ManifestError, compat, generate, parse

C_TYPES = {"FLOAT32": "float", "UINT8": "uint8_t", "INT8": "int8_t", "INT32": "int32_t", "INT64": "int64_t",
           "BOOL": "bool", "FLOAT16": "uint16_t", "FLOAT64": "double", "UINT16": "uint16_t", "INT16": "int16_t",
           "UINT32": "uint32_t", "UINT64": "uint64_t", "BFLOAT16": "uint16_t", "FLOAT8E4M3FN": "uint8_t",
           "FLOAT8E4M3FNUZ": "uint8_t", "FLOAT8E5M2": "uint8_t", "FLOAT8E5M2FNUZ": "uint8_t"}


def test_header_and_json_carry_every_dtype_with_its_size(tmp_path, manifest):
    dt = manifest.dtype_enum
    sizes = dict(dt.element_bytes)
    assert sorted(sizes) == sorted(name for name, _ in dt.values)
    assert generate.manifest_json(manifest)["enums"][[e.name for e in manifest.enums].index(dt.name)][
        "element_bytes"] == sizes
    cxx = shutil.which("c++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    generate.write_all(manifest, tmp_path)
    source = tmp_path / "sizes.cpp"
    checks = "".join(f"static_assert(bytes_of(HIPDNN_EP_DTYPE_{n}) == sizeof({C_TYPES[n]}), \"{n}\");\n"
                     for n, _ in dt.values)
    source.write_text('#include <cstdint>\n#include "hipdnn_ep/runtime_abi.h"\n'
                      "constexpr int bytes_of(int code) {\n  switch (code) {\n"
                      "#define CASE(name, code, bytes) case code: return bytes;\n"
                      "    HIPDNN_EP_DTYPES(CASE)\n  }\n  return 0;\n}\n" + checks +
                      "static_assert(bytes_of(8) == 0, \"not a dtype\");\n")
    proc = subprocess.run([cxx, "-std=c++17", "-Wall", "-Werror", "-fsyntax-only", "-I", str(tmp_path / "include"),
                           str(source)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_element_bytes_must_cover_exactly_the_values(manifest_text):
    with pytest.raises(ManifestError, match="element_bytes must give"):
        parse(manifest_text.replace("FLOAT64 = 8 }", "FLOAT64 = 8, COMPLEX = 16 }"))
    with pytest.raises(ManifestError, match="element_bytes must give"):
        parse(manifest_text.replace("FLOAT16 = 2,", "FLOAT16 = 3,"))


def test_a_changed_size_breaks_the_abi(manifest, manifest_text):
    violations = compat.check(manifest, parse(manifest_text.replace("INT32 = 4,", "INT32 = 8,")))
    assert any("element_bytes of INT32 changed from 4 to 8" in v.message for v in violations), violations
