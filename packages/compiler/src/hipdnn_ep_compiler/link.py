"""Link the host program's object into program.so against an import stub of the runtime.

The stub is generated here, in a temporary directory, from the manifest: one empty definition
per function available at the target minor, a version script with one node per minor
(`version_nodes`), and the manifest's SONAME.  Linking with `-z defs` against it proves every
reference resolves, and the artifact's undefined references carry the runtime's symbol
versions and SONAME, so at load they bind to the real runtime.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from .abi import RuntimeAbi
from .errors import LinkError


def find_cc() -> str:
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        raise LinkError("no C compiler found to link the artifact (install cc/gcc, or set CC)")
    return cc


def version_script(version_nodes: dict[int, str], names_by_minor: dict[int, list[str]], upto: int) -> str:
    """A linker version script with the runtime's symbol versions: one node per ABI minor 0..upto
    (`version_nodes`, from the manifest JSON), each exporting the names that minor introduced and
    inheriting the previous one; everything else is local. The one writer of such scripts outside
    the ABI tool (which writes the runtime's own from the manifest): the import stub here and the
    test doubles of the runtime use it."""
    nodes = []
    prev = None
    for minor in range(0, upto + 1):
        body = "".join(f"  {n};\n" for n in names_by_minor.get(minor, ()))
        local = "local: *;\n" if prev is None else ""
        tail = f" {prev}" if prev else ""
        scope = "global:\n" if body else ""  # a minor that added no function has an empty node
        nodes.append(f"{version_nodes[minor]} {{\n{scope}{body}{local}}}{tail};\n")
        prev = version_nodes[minor]
    return "".join(nodes)


def stub_sources(abi: RuntimeAbi) -> tuple[str, str]:
    """(C source, version script) of the import stub for the target minor."""
    fns = abi.functions_available()
    c = "/* generated import stub: symbols only, never run */\n" + "".join(
        f"void {f.name}(void) {{}}\n" for f in fns)
    by_minor: dict[int, list[str]] = {}
    for f in fns:
        by_minor.setdefault(f.since, []).append(f.name)
    return c, version_script(abi.version_nodes, by_minor, abi.target_minor)


def _run(cmd: list[str], what: str) -> None:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as exc:
        raise LinkError(f"{what} failed: cannot run {cmd[0]} ({exc.strerror or exc})") from None
    if proc.returncode != 0:
        raise LinkError(f"{what} failed ({' '.join(cmd)}):\n{proc.stderr.strip()}")


def link_shared_object(object_file: Path, out_path: Path, abi: RuntimeAbi) -> None:
    cc = find_cc()
    with tempfile.TemporaryDirectory(prefix="hipdnn-ep-link-") as tmp:
        tmpd = Path(tmp)
        c_src, vscript = stub_sources(abi)
        (tmpd / "stub.c").write_text(c_src)
        (tmpd / "stub.map").write_text(vscript)
        stub = tmpd / abi.soname
        _run([cc, "-shared", "-fPIC", "-o", str(stub), str(tmpd / "stub.c"),
              f"-Wl,-soname,{abi.soname}", f"-Wl,--version-script,{tmpd / 'stub.map'}"], "building the import stub")
        tmp_out = tmpd / "program.so"
        _run([cc, "-shared", "-Wl,-z,defs", "-o", str(tmp_out), str(object_file), str(stub), "-lm"],
             "linking program.so")
        shutil.copyfile(tmp_out, out_path)
