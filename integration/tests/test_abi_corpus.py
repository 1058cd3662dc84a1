"""ABI gate (run by `nox -s abi`): a fixed corpus of fixed- and dynamic-shape graphs compiles against
the installed runtime's own manifest (the compiler links each artifact with -z defs against an import
stub generated from it), and the dynamic loader then resolves every symbol each artifact imports, with
its symbol version, against the real runtime library (`ldd -r` relocates without running code).
This does not depend on which models the other suites happen to cover: the dynamic graphs are the
ones whose host-scalar path imports hipdnn_ep_get_host_scratch_base, the function whose deletion
once broke every dynamic-shape session."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from models import attention_model, make_dynamic, shape_chain_model

pytestmark = pytest.mark.abi


def _corpus():
    return {
        "encoder-dynamic": attention_model(),
        "encoder-seq128": attention_model(batch=1, seq=128),
        "shape-chain-dynamic": shape_chain_model(),
        "shape-chain-fixed": make_fixed(shape_chain_model(), {"batch": 2, "seq": 5}),
        "encoder-all-dims-dynamic": make_dynamic(attention_model(batch=1, seq=16)),
    }


def make_fixed(model, dims: dict[str, int]):
    for vi in model.graph.input:
        for d in vi.type.tensor_type.shape.dim:
            if d.dim_param in dims:
                d.dim_value = dims[d.dim_param]
    return model


CORPUS = _corpus()


def _unresolved(program: Path, library: Path) -> list[str]:
    """What the dynamic loader cannot resolve when program.so meets `library` as its runtime."""
    ldd = shutil.which("ldd")
    if ldd is None:
        pytest.skip("needs ldd (glibc)")
    proc = subprocess.run([ldd, "-r", str(program)], capture_output=True, text=True, check=True,
                          env={"LD_LIBRARY_PATH": str(library.parent), "PATH": os.environ.get("PATH", "")})
    assert f"{library.name} => {library}" in proc.stdout, proc.stdout
    return [line for line in (proc.stdout + proc.stderr).splitlines()
            if "undefined symbol" in line or "not found" in line]


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_corpus_links_against_the_real_runtime(name, compiler, runtime, tmp_path):
    manifest = Path(runtime.__file__).parent / "abi_manifest.json"
    info = compiler.compile_model(CORPUS[name], tmp_path / "artifact", manifest=manifest)
    dynamic = "dynamic" in name
    assert ("hipdnn_ep_get_host_scratch_base" in info.imports) == dynamic
    assert _unresolved(info.path / "program.so", Path(runtime.library_path())) == []


def test_the_check_catches_a_missing_runtime_function(compiler, runtime, tmp_path):
    """The same check against a library lacking hipdnn_ep_get_host_scratch_base names it."""
    info = compiler.compile_model(CORPUS["shape-chain-dynamic"], tmp_path / "artifact")
    manifest_functions = [f for f in runtime.abi_manifest()["functions"]
                          if f["name"] != "hipdnn_ep_get_host_scratch_base"]
    stub = tmp_path / "stub.c"
    stub.write_text("".join(f"void {f['name']}(void) {{}}\n" for f in manifest_functions))
    from hipdnn_ep_compiler.link import version_script

    nodes = {int(k): v for k, v in runtime.abi_manifest()["version_nodes"].items()}
    script = tmp_path / "stub.map"
    by_minor: dict[int, list[str]] = {}
    for f in manifest_functions:
        by_minor.setdefault(f["since"], []).append(f["name"])
    script.write_text(version_script(nodes, by_minor, max(nodes)))
    lib = tmp_path / "lib" / "libhipdnn_ep_runtime.so.1"
    lib.parent.mkdir()
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib), str(stub), f"-Wl,--version-script={script}",
                    "-Wl,-soname,libhipdnn_ep_runtime.so.1"], check=True)
    assert _unresolved(info.path / "program.so", lib) == [
        "undefined symbol: hipdnn_ep_get_host_scratch_base, version HIPDNN_EP_1.0\t"
        f"({info.path / 'program.so'})"]
