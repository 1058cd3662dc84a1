"""The runtime's kernel lists (backend table slots, each backend's declarations, validators, entry
points) come from the manifest's [[kernels]]: a kernel added to the manifest appears in all of them
without editing any of those files."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hipdnn_ep_abi import generate, parse

RUNTIME_SRC = Path(__file__).resolve().parents[2] / "runtime/src"
NEW_KERNEL = '''
[[kernels]]
name = "hipdnn_ep_kernel_new_op"
since = 1
int_attrs = []
doc = "A kernel added to the manifest."
'''


def test_kernel_list_names_every_kernel_in_manifest_order(manifest):
    text = generate.kernel_list(manifest)
    listed = re.findall(r"^  X\((\w+)\) \\$", text, flags=re.M)
    assert listed == [generate.kernel_suffix(manifest, fn) for fn in manifest.kernels()]
    assert f"#define HIPDNN_EP_KERNEL_COUNT {len(listed)}\n" in text


def test_a_kernel_added_to_the_manifest_reaches_every_runtime_list(tmp_path, manifest_text):
    cxx = shutil.which("c++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    gen = tmp_path / "gen"
    generate.write_all(parse(manifest_text + NEW_KERNEL), gen)
    source = tmp_path / "lists.cpp"
    source.write_text(
        '#include "kernels/backend_table.h"\n#include "kernels/cpu/cpu_kernels.h"\n#include "kernels/validate.h"\n'
        "using namespace hipdnn_ep::kernels;\n"
        "static_assert(sizeof(KernelTable) == HIPDNN_EP_KERNEL_COUNT * sizeof(KernelFn));\n"
        "KernelFn KernelTable::*slot = &KernelTable::new_op;\n"
        "KernelFn cpu_fn = &cpu::new_op;\n"
        "void (*validator)(const hipdnn_ep_kernel_args_t*) = &validate_new_op;\n")
    proc = subprocess.run([cxx, "-std=c++17", "-Wall", "-Werror", "-fsyntax-only", "-I", str(gen / "include"),
                           "-I", str(gen / "internal"), "-I", str(RUNTIME_SRC), str(source)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def _declared_or_assigned(s: str) -> str:
    """A line that names kernel `s` in a list: a declaration, a table slot or fill, an entry point."""
    return (rf"(\bvalidate_{s}\(const[^{{]*\);|\bt\.{s} =|KernelFn {s};|DEFINE_KERNEL\({s}\)|"
            rf"^void {s}\(hipdnn_ep_state_t[^{{]*\);)")


def test_no_runtime_source_lists_the_kernels_by_hand(manifest):
    """Only kernel bodies name a kernel: no file declares or assigns all of them one by one."""
    suffixes = [generate.kernel_suffix(manifest, fn) for fn in manifest.kernels()]
    for path in sorted((RUNTIME_SRC / "kernels").rglob("*")):
        if path.suffix not in (".h", ".cpp", ".hip"):
            continue
        text = path.read_text()
        listed = [s for s in suffixes if re.search(_declared_or_assigned(s), text, re.M)]
        assert len(listed) < 2, f"{path.relative_to(RUNTIME_SRC)} lists kernels by hand: {listed}"
