"""ABI gate (run by `nox -s abi`): the runtime keeps the write bounds its manifest declares.

`check-compat` trusts each function's `writes = { PARAM = BOUND }`: a caller built for the function's
own minor passes a struct that ends after that minor's fields, and the bound says nothing past it is
written. Here every declared bound is checked against the built library: each function is called
through ctypes on a struct of the oldest caller's size followed by canary bytes (for
"caller_struct_size", on every shorter struct_size a field boundary allows too), and no byte past the
bound may change. A stub whose init writes every field, as ABI 1.3's first init did, is caught.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ABI_DIR = ROOT / "packages/abi"
if str(ABI_DIR) not in sys.path:
    sys.path.insert(0, str(ABI_DIR))
from hipdnn_ep_abi import DEFAULT_MANIFEST, Manifest, generate, load  # noqa: E402
from hipdnn_ep_abi.model import CALLER_STRUCT_SIZE, Function, Struct  # noqa: E402

pytestmark = pytest.mark.abi

MANIFEST = load(DEFAULT_MANIFEST)
WRITERS = [fn for fn in MANIFEST.functions if MANIFEST.written_structs(fn)]
CANARY = 0xAB
SLACK = 64  # canary bytes after the struct


def _sizeof(struct: Struct, fields) -> int:
    """sizeof the struct a caller declares with `fields` (padded to the struct's alignment)."""
    end = Manifest.layout_size(tuple(fields))
    return (end + struct.align - 1) // struct.align * struct.align


class _Caller:
    """Calls runtime functions the way a C caller of an older minor would, on one CPU state."""

    def __init__(self, lib: ctypes.CDLL, m: Manifest) -> None:
        self.lib, self.m = lib, m
        options = m.struct(f"{m.prefix}_state_options_t")
        buffer = (ctypes.c_uint8 * options.size)()
        lib.hipdnn_ep_state_options_init(buffer)
        self.state = ctypes.c_void_p()
        lib.hipdnn_ep_state_create.restype = ctypes.c_int32
        assert lib.hipdnn_ep_state_create(buffer, ctypes.byref(self.state)) == 0, self.last_error()

    def last_error(self) -> str:
        self.lib.hipdnn_ep_last_error.restype = ctypes.c_char_p
        return (self.lib.hipdnn_ep_last_error() or b"").decode()

    def close(self) -> None:
        self.lib.hipdnn_ep_state_destroy(self.state)

    def overwrites(self, fn: Function) -> list[str]:
        """Each way `fn` wrote past its declared bound (empty: it kept it)."""
        problems = []
        bounds = dict(fn.writes)
        for param, struct in self.m.written_structs(fn):
            bound = bounds.get(param.name)
            assert bound is not None, f"{fn.name}: no write bound for {param.name} (check-compat refuses this)"
            caller = [f for f in struct.fields if f.since <= fn.since]
            written = self.m.fields_written(fn, struct, bound)
            if written is None:  # caller_struct_size: every field boundary the oldest caller may name
                sizes = [f.offset + f.size for f in caller]
            else:
                sizes = [_sizeof(struct, caller)]
            for size in sizes:
                limit = size if written is None else Manifest.layout_size(written)
                buffer = (ctypes.c_uint8 * (size + SLACK))(*([CANARY] * (size + SLACK)))
                ctypes.c_uint64.from_buffer(buffer).value = size  # struct_size, as a caller of that size sets it
                status = self._call(fn, param.name, buffer)
                if status not in (None, 0):
                    problems.append(f"{fn.name} refused a {size}-byte {struct.name}: {self.last_error()}")
                    continue
                changed = [i for i in range(limit, size + SLACK) if buffer[i] != CANARY]
                if changed:
                    problems.append(f"{fn.name} (writes {param.name} = \"{bound}\") wrote bytes {changed[0]}.."
                                    f"{changed[-1]} of a {size}-byte {struct.name} followed by canaries: past "
                                    f"byte {limit}, where its bound ends")
        return problems

    def _call(self, fn: Function, param: str, buffer) -> int | None:
        args = []
        for p in fn.params:
            if p.name == param:
                args.append(buffer)
            elif str(p.type) == f"{self.m.prefix}_state_t*":
                args.append(self.state)
            elif p.name in ("backend", "device_ordinal"):
                args.append(ctypes.c_int32(0))  # the device of the CPU state
            else:
                pytest.fail(f"{fn.name}: this test cannot pass its parameter '{p.decl()}'; teach _Caller._call "
                            f"how, so that its write bound is checked")
        f = getattr(self.lib, fn.name)
        f.restype = None if str(fn.returns) == "void" else ctypes.c_int32
        return f(*args)


@pytest.mark.parametrize("fn", WRITERS, ids=[fn.name for fn in WRITERS])
def test_the_runtime_keeps_each_declared_write_bound(fn, runtime):
    caller = _Caller(ctypes.CDLL(runtime.library_path()), MANIFEST)
    try:
        assert caller.overwrites(fn) == []
    finally:
        caller.close()


OVERREACHING_INIT = """#include <string.h>
#include "hipdnn_ep/runtime_abi.h"
/* ABI 1.3's first init: every field, struct_size = sizeof */
void hipdnn_ep_state_options_init(hipdnn_ep_state_options_t* o) {
  memset(o, 0, sizeof *o); o->struct_size = sizeof *o; o->alignment = 256; o->graph_capture = 1;
}
int32_t hipdnn_ep_state_create(const hipdnn_ep_state_options_t* o, hipdnn_ep_state_t** s) {
  (void)o; *s = (hipdnn_ep_state_t*)1; return 0;
}
int32_t hipdnn_ep_state_destroy(hipdnn_ep_state_t* s) { (void)s; return 0; }
const char* hipdnn_ep_last_error(void) { return ""; }
"""


def test_a_runtime_writing_past_its_bound_is_caught(tmp_path):
    """The check itself: a library whose init writes every field (the crash of the matrix's 12 cells)."""
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("needs a C compiler")
    generate.write_all(MANIFEST, tmp_path / "gen")
    (tmp_path / "stub.c").write_text(OVERREACHING_INIT)
    lib = tmp_path / "libstub.so"
    subprocess.run([cc, "-shared", "-fPIC", "-I", str(tmp_path / "gen/include"), "-o", str(lib),
                    str(tmp_path / "stub.c")], check=True)
    caller = _Caller(ctypes.CDLL(str(lib)), MANIFEST)
    init = MANIFEST.function("hipdnn_ep_state_options_init")
    assert dict(init.writes) != {"options": CALLER_STRUCT_SIZE}
    problems = caller.overwrites(init)
    assert len(problems) == 1, problems
    assert problems[0].startswith('hipdnn_ep_state_options_init (writes options = "fields_of_1.0") wrote bytes '
                                  "32..39 of a 32-byte hipdnn_ep_state_options_t followed by canaries")
