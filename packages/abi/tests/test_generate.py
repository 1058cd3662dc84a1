"""Generated files: they compile, they catch mistyped definitions, and checked-in copies are current."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from hipdnn_ep_abi import generate, parse
from hipdnn_ep_abi.__main__ import main
from hipdnn_ep_abi.model import CType, ManifestError

REPO = Path(__file__).resolve().parents[3]
COMPILER_JSON = REPO / "packages/compiler/src/hipdnn_ep_compiler/abi/runtime_abi_v1.json"


def compile_cpp(tmp_path: Path, manifest, source: str) -> subprocess.CompletedProcess:
    cxx = shutil.which("c++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    gen = tmp_path / "gen"
    generate.write_all(manifest, gen)
    src = tmp_path / "def.cpp"
    src.write_text(source + f'\n#include "{gen / "abi_check.cpp"}"\n')
    return subprocess.run([cxx, "-std=c++17", "-fsyntax-only", "-Werror=missing-declarations",
                           "-I", str(gen / "include"), str(src)], capture_output=True, text=True)


def test_header_compiles_as_c_and_cpp(tmp_path, manifest):
    generate.write_all(manifest, tmp_path)
    for compiler, flags in (("cc", ["-std=c11", "-x", "c"]), ("c++", ["-std=c++17", "-x", "c++"])):
        path = shutil.which(compiler)
        if path is None:
            pytest.skip(f"no {compiler}")
        subprocess.run([path, *flags, "-Wall", "-Werror", "-fsyntax-only",
                        str(tmp_path / "include/hipdnn_ep/runtime_abi.h")], check=True)


def test_layout_checks_hold_for_the_real_compiler(tmp_path, manifest):
    proc = compile_cpp(tmp_path, manifest, '#include "hipdnn_ep/runtime_abi.h"')
    assert proc.returncode == 0, proc.stderr


def test_definition_with_other_parameters_does_not_compile(tmp_path, manifest):
    """A runtime definition that drifts from the manifest fails the build instead of linking silently."""
    source = ('#include "hipdnn_ep/runtime_abi.h"\n'
              'extern "C" int32_t hipdnn_ep_get_pool_base(hipdnn_ep_state_t*, void**) { return 0; }\n')
    proc = compile_cpp(tmp_path, manifest, source)
    assert proc.returncode != 0
    assert "hipdnn_ep_get_pool_base" in proc.stderr


def test_definition_without_the_header_does_not_compile(tmp_path, manifest):
    source = ('#include <cstdint>\n'
              'extern "C" int32_t hipdnn_ep_helper(void*) { return 0; }\n'
              '#include "hipdnn_ep/runtime_abi.h"\n')
    proc = compile_cpp(tmp_path, manifest, source)
    assert proc.returncode != 0 and "missing-declarations" in proc.stderr


def test_json_lists_every_function_with_a_hash(manifest):
    data = generate.manifest_json(manifest)
    assert data["abi"] == {"major": manifest.major, "minor": manifest.minor, "prefix": "hipdnn_ep",
                           "soname": "libhipdnn_ep_runtime.so.1"}
    names = [f["name"] for f in data["functions"]]
    assert len(names) == len(set(names)) == len(manifest.functions)
    assert all(len(f["hash"]) == 16 for f in data["functions"])
    malloc = next(f for f in data["functions"] if f["name"] == "hipdnn_ep_malloc")
    assert [p["llvm"] for p in malloc["params"]] == ["ptr", "i64", "ptr"]


def test_version_script_has_a_node_per_minor(manifest):
    script = generate.version_script(manifest)
    assert "HIPDNN_EP_1.0 {" in script and "} HIPDNN_EP_1.0;" in script
    assert script.index("hipdnn_ep_malloc;") < script.index("HIPDNN_EP_1.1 {") < script.index("hipdnn_ep_kernel_gemm;")


def test_a_minor_without_new_functions_links(tmp_path, manifest_text):
    """A minor that adds only an element type or an enum value has an empty version node."""
    from conftest import set_minor, stub_source
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler")
    m = parse(set_minor(manifest_text, parse(manifest_text).minor + 1))
    generate.write_all(m, tmp_path / "gen")
    (tmp_path / "stub.c").write_text(stub_source(m))
    subprocess.run([cc, "-shared", "-fPIC", "-fvisibility=hidden", "-I", str(tmp_path / "gen/include"),
                    f"-Wl,--version-script={tmp_path / 'gen/runtime.map'}", "-o", str(tmp_path / "lib.so"),
                    str(tmp_path / "stub.c")], check=True)


def test_compiler_copy_of_the_json_is_current():
    assert main(["json", "--check", str(COMPILER_JSON)]) == 0
    assert json.loads(COMPILER_JSON.read_text())["functions"]


def test_stale_json_is_reported(tmp_path, capsys):
    stale = tmp_path / "abi.json"
    stale.write_text("{}")
    assert main(["json", "--check", str(stale)]) == 1
    assert "stale" in capsys.readouterr().err


@pytest.mark.parametrize("bad", ["uint64_t", "const", "unsigned long x"])
def test_unparseable_parameters_are_rejected(manifest_text, bad):
    text = manifest_text.replace('"uint64_t needed_size"', f'"{bad}"')
    with pytest.raises(ManifestError):
        parse(text)


def test_unknown_type_is_rejected(manifest_text):
    with pytest.raises(ManifestError, match="unknown type"):
        parse(manifest_text.replace('"uint64_t needed_size"', '"size_t needed_size"'))


def test_since_beyond_the_minor_is_rejected(manifest_text):
    with pytest.raises(ManifestError, match="newer than the ABI minor"):
        expand = 'name = "hipdnn_ep_kernel_expand"\nsince = '
        parse(manifest_text.replace(expand + "1", expand + "5"))


def test_ctype_round_trip():
    assert str(CType.parse("const   hipdnn_ep_tensor_ref_t *")) == "const hipdnn_ep_tensor_ref_t*"
    assert CType.parse("void**").llvm() == "ptr" and CType.parse("double").llvm() == "f64"


def test_a_callback_is_declared_before_the_struct_that_holds_it(manifest):
    header = generate.header(manifest)
    typedef = header.index("typedef int32_t hipdnn_ep_output_alloc_fn(void* context, int32_t index, "
                           "const hipdnn_ep_tensor_ref_t* output, uint64_t size, void** out_data);")
    assert header.index("} hipdnn_ep_tensor_ref_t;") < typedef < header.index("hipdnn_ep_output_alloc_fn* alloc;")


def test_a_callback_field_must_name_a_declared_callback(manifest_text):
    with pytest.raises(ManifestError, match="field alloc needs a declared callback"):
        parse(manifest_text.replace("hipdnn_ep_output_alloc_fn* alloc", "hipdnn_ep_missing_fn* alloc"))
