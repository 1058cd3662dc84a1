"""Trust boundaries: the EP runs only native code that this install produced
or that the user explicitly trusted, and verifies it before loading it (the HMAC and the
length-extension helper themselves: test_trust_crypto.py)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from conftest import NO_FALLBACK, Env, _spy_python, make_session
from models import UNSUPPORTED, elementwise, reference
from sha256_forge import length_extend


def _context_node(model: onnx.ModelProto) -> onnx.NodeProto:
    (node,) = [n for n in model.graph.node if n.op_type == "EPContext"]
    return node


def _attr(node: onnx.NodeProto, name: str) -> onnx.AttributeProto:
    (attr,) = [a for a in node.attribute if a.name == name]
    return attr


def compile_ctx(tmp_path: Path, devices, env: Env, embed: bool, name: str = "m") -> Path:
    model = elementwise(tmp_path / f"{name}.onnx", ["n", 4])
    out = tmp_path / f"{name}_ctx.onnx"
    make_session(model, devices, env.options, dict(NO_FALLBACK, **{
        "ep.context_enable": "1", "ep.context_file_path": str(out), "ep.context_embed_mode": "1" if embed else "0"}))
    return out


def _runs(sess) -> None:
    x = np.ones((2, 4), np.float32)
    np.testing.assert_allclose(sess.run(None, {"x": x, "y": x})[0], reference(x, x))


def test_length_extended_tag_is_refused(tmp_path: Path, ep_devices, env: Env) -> None:
    """Issue 7, defect 3: with tag = SHA-256(key || code), appending bytes to the code gave a valid tag
    without the key, and the install ran the modified code without trust_ep_context_code."""
    ctx = compile_ctx(tmp_path, ep_devices, env, embed=True)
    model = onnx.load(str(ctx))
    node = _context_node(model)
    code = _attr(node, "ep_cache_context").s
    notes = json.loads(_attr(node, "notes").s)
    tag = notes["tag"].rpartition(":")[2]
    forged, forged_tag = length_extend(tag, 64, code, b"code the install never produced")
    _attr(node, "ep_cache_context").s = forged
    notes["tag"] = forged_tag
    _attr(node, "notes").s = json.dumps(notes).encode()
    onnx.save(model, str(tmp_path / "forged.onnx"))
    with pytest.raises(Exception, match="did not produce.*trust_ep_context_code=1"):
        make_session(tmp_path / "forged.onnx", ep_devices, env.options, NO_FALLBACK)
    _runs(make_session(ctx, ep_devices, env.options, NO_FALLBACK))  # the genuine model still runs


# ---- planted code: a shared object whose constructor leaves a marker when it is loaded ----


@pytest.fixture
def planted(tmp_path: Path):
    """make(genuine, out) -> (out, marker): a .so that creates `marker` when loaded, carrying the metadata
    section of the genuine artifact (so the runtime's checks before dlopen pass, as in the reported attack)."""

    def make(genuine: Path, out: Path) -> tuple[Path, Path]:
        bare, marker = _plant_source(tmp_path)
        meta = tmp_path / "meta.bin"
        subprocess.run(["objcopy", f"--dump-section=.hipdnn_ep_meta={meta}", str(genuine), str(tmp_path / "x.so")],
                       check=True)
        out.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["objcopy", f"--add-section=.hipdnn_ep_meta={meta}", str(bare), str(out)], check=True)
        return out, marker

    return make


def _only_entry(env: Env) -> Path:
    (entry,) = env.cache_entries()
    return entry


def test_planted_cache_entry_is_not_loaded(tmp_path: Path, ep_devices, env: Env, planted) -> None:
    """Issue 7, defect 1: a lookup trusted any entry whose entry.json parsed; replacing the cached code
    made the next session run it.  Now the entry's MAC fails, it is evicted and compiled again."""
    model = elementwise(tmp_path / "m.onnx", ["n", 4])
    make_session(model, ep_devices, env.options, NO_FALLBACK)
    so = _only_entry(env) / "artifact" / "program.so"
    genuine = tmp_path / "genuine.so"
    genuine.write_bytes(so.read_bytes())
    _, marker = planted(genuine, so)
    sess = make_session(model, ep_devices, env.options, NO_FALLBACK)
    assert not marker.exists(), "the planted code ran"
    _runs(sess)
    assert len(env.compiles()) == 2, "the entry that does not verify is compiled again"
    assert (_only_entry(env) / "artifact" / "program.so").read_bytes() == genuine.read_bytes()


@pytest.mark.parametrize("owner", ["foreign", "own"])
def test_cache_others_can_write_is_refused(tmp_path: Path, ep_devices, env: Env, owner: str) -> None:
    """Issue 7, defect 1: a cache folder with mode 777, or one another user owns, decides which code runs."""
    cache = tmp_path / "shared-cache"
    cache.mkdir()
    cache.chmod(0o777)
    expected = "lets other users write it.*chmod go-w"
    if owner == "foreign":
        if os.geteuid() != 0:
            pytest.skip("giving a folder to another user needs root")
        os.chown(cache, 4321, 4321)
        expected = "belongs to user id 4321"
    options = dict(env.options, cache_dir=str(cache))
    with pytest.raises(Exception, match=expected):
        make_session(elementwise(tmp_path / "m.onnx", ["n", 4]), ep_devices, options, NO_FALLBACK)
    assert list(cache.iterdir()) == []


def test_cache_folders_are_private(tmp_path: Path, ep_devices, env: Env) -> None:
    make_session(elementwise(tmp_path / "m.onnx", ["n", 4]), ep_devices, env.options, NO_FALLBACK)
    assert stat.S_IMODE(env.cache_dir.stat().st_mode) == 0o700
    key = env.cache_dir / "install.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and len(key.read_text()) == 64


def test_default_cache_without_home_is_per_user(tmp_path: Path, ep_devices, env: Env,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 7, defect 1: with neither HOME nor XDG_CACHE_HOME the default was one fixed folder in the temp
    directory, used even when another user had created it with mode 777."""
    for name in ("HOME", "XDG_CACHE_HOME", "HIPDNN_EP_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    options = {k: v for k, v in env.options.items() if k != "cache_dir"}
    squatted = tmp_path / "hipdnn-ep-cache"
    squatted.mkdir(mode=0o777)
    squatted.chmod(0o777)
    _runs(make_session(elementwise(tmp_path / "m.onnx", ["n", 4]), ep_devices, options, NO_FALLBACK))
    mine = tmp_path / f"hipdnn-ep-cache-{os.geteuid()}"
    assert stat.S_IMODE(mine.stat().st_mode) == 0o700
    assert list(squatted.iterdir()) == []
    shutil.rmtree(mine)
    mine.mkdir()
    mine.chmod(0o777)
    with pytest.raises(Exception, match="lets other users write it"):
        make_session(elementwise(tmp_path / "m.onnx", ["n", 4]), ep_devices, options, NO_FALLBACK)


def test_replaced_epcontext_file_is_not_loaded(tmp_path: Path, ep_devices, env: Env, planted) -> None:
    """Issue 7, defect 2: embedded code was verified, then <cache>/epcontext/<sha>.so was loaded whenever it
    existed, never compared with the verified bytes."""
    ctx = compile_ctx(tmp_path, ep_devices, env, embed=True)
    code = _attr(_context_node(onnx.load(str(ctx))), "ep_cache_context").s
    genuine = tmp_path / "genuine.so"
    genuine.write_bytes(code)
    _, marker = planted(genuine, env.cache_dir / "epcontext" / (hashlib.sha256(code).hexdigest() + ".so"))
    sess = make_session(ctx, ep_devices, env.options, NO_FALLBACK)
    assert not marker.exists(), "the planted code ran"
    _runs(sess)


def test_refused_embedded_code_is_not_written(tmp_path: Path, ep_devices, env: Env) -> None:
    """Issue 7, defect 2: refused, untrusted embedded bytes were still written into the cache."""
    ctx = compile_ctx(tmp_path, ep_devices, env, embed=True)
    other = tmp_path / "other-install"
    with pytest.raises(Exception, match="did not produce"):
        make_session(ctx, ep_devices, dict(env.options, cache_dir=str(other)), NO_FALLBACK)
    assert [p.name for p in other.rglob("*") if p.is_file()] == ["install.key"]


def _mapped_files() -> list[str]:
    return [line.split(None, 5)[5] for line in Path("/proc/self/maps").read_text().splitlines()
            if len(line.split(None, 5)) == 6]


@pytest.mark.parametrize("source", ["cache", "file", "embedded"])
def test_code_is_loaded_from_the_verified_copy(tmp_path: Path, ep_devices, env: Env, source: str) -> None:
    """Issue 7, defect 6: the EP checked a file and then let the runtime dlopen it by path (a window in which
    it could be replaced).  The code now runs from a sealed copy of the bytes that were verified."""
    if source == "cache":
        model = elementwise(tmp_path / "m.onnx", ["n", 4])
        make_session(model, ep_devices, env.options, NO_FALLBACK)
        sess = make_session(model, ep_devices, env.options, NO_FALLBACK)
        assert len(env.compiles()) == 1
    else:
        ctx = compile_ctx(tmp_path, ep_devices, env, embed=source == "embedded")
        sess = make_session(ctx, ep_devices, env.options, NO_FALLBACK)
    _runs(sess)
    mapped = _mapped_files()
    assert not [m for m in mapped if m.startswith(str(tmp_path))], "code mapped straight from a file that can change"
    assert any("memfd:hipdnn-ep-artifact" in m for m in mapped)


def test_damaged_cached_artifact_is_rebuilt(tmp_path: Path, ep_devices, env: Env) -> None:
    """Issue 7, defect 6: a damaged cached .so failed every later session until the folder was deleted."""
    model = elementwise(tmp_path / "m.onnx", ["n", 4])
    make_session(model, ep_devices, env.options, NO_FALLBACK)
    so = _only_entry(env) / "artifact" / "program.so"
    so.write_bytes(so.read_bytes()[:1000])
    _runs(make_session(model, ep_devices, env.options, NO_FALLBACK))
    assert len(env.compiles()) == 2
    _runs(make_session(model, ep_devices, env.options, NO_FALLBACK))
    assert len(env.compiles()) == 2, "the rebuilt entry is used"


def test_cache_disabled_needs_no_cache_folder(tmp_path: Path, ep_devices, env: Env,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 7, defect 6: cache_enable=0 still created (and needed) a writable cache folder."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    for name in ("XDG_CACHE_HOME", "HIPDNN_EP_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(blocker / "home"))  # nothing can be created below a file
    options = {k: v for k, v in env.options.items() if k != "cache_dir"}
    _runs(make_session(elementwise(tmp_path / "m.onnx", ["n", 4]), ep_devices, dict(options, cache_enable="0"),
                       NO_FALLBACK))
    with pytest.raises(Exception, match="cannot create the compile cache folder .*cache_dir"):
        make_session(elementwise(tmp_path / "m.onnx", ["n", 4]), ep_devices, options, NO_FALLBACK)


@pytest.mark.parametrize("backend", ["cpu", "cuda"])
def test_unusable_device_fails_at_session_creation(tmp_path: Path, ep_devices, shared_env: Env,
                                                   backend: str) -> None:
    """Issue 7, defect 6: device_id=99 (or a backend the runtime cannot drive) failed only at the first Run."""
    options = dict(shared_env.options, backend=backend, device_id="99")
    with pytest.raises(Exception, match=f"backend '{backend}' device 99, which the runtime cannot open.*device_id"):
        make_session(elementwise(tmp_path / "m.onnx", ["n", 4]), ep_devices, options, NO_FALLBACK)


def test_symlinked_ep_cache_context_leaving_the_folder_is_refused(tmp_path: Path, ep_devices, env: Env) -> None:
    """Issue 7, defect 6: ep_cache_context reached through a symlink that leaves the model's folder was followed."""
    folder = tmp_path / "models"
    folder.mkdir()
    ctx = compile_ctx(folder, ep_devices, env, embed=False)
    (code_dir,) = folder.glob("m_ctx_*.hipdnn")
    elsewhere = tmp_path / "elsewhere"
    shutil.move(code_dir, elsewhere)
    code_dir.symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(Exception, match="points outside its model's folder.*symbolic link"):
        make_session(ctx, ep_devices, dict(env.options, trust_ep_context_code="1"), NO_FALLBACK)
    # A link inside the folder is fine.
    code_dir.unlink()
    shutil.move(elsewhere, folder / "real")
    code_dir.symlink_to(folder / "real", target_is_directory=True)
    _runs(make_session(ctx, ep_devices, env.options, NO_FALLBACK))


RACE = """
import os, sys, time
import onnxruntime as ort, hipdnn_ep
devices = hipdnn_ep.register(ort)
while not os.path.exists(sys.argv[3]):
    time.sleep(0.001)
so = ort.SessionOptions()
so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
# No compiler: loading an EPContext model never compiles.
so.add_provider_for_devices(devices, {"cache_dir": sys.argv[2], "compiler_python": sys.argv[4]})
try:
    ort.InferenceSession(sys.argv[1], sess_options=so)
    print("loaded")
except Exception as e:
    print("did not produce" in str(e) and "refused" or str(e))
"""


def test_concurrent_install_key_creation(tmp_path: Path, ep_devices, env: Env) -> None:
    """Issue 7, defect 6: a second process could read install.key half-written.  Processes racing to create
    it all read the same whole key (here: all refuse the foreign model for the right reason)."""
    ctx = compile_ctx(tmp_path, ep_devices, env, embed=True)
    fresh, go = tmp_path / "fresh-install", tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", RACE, str(ctx), str(fresh), str(go), str(tmp_path / "none")],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for _ in range(4)]
    time.sleep(1.0)
    go.touch()
    outputs = [p.communicate(timeout=120)[0].strip().splitlines()[-1] for p in procs]
    assert outputs == ["refused"] * 4
    assert len((fresh / "install.key").read_text()) == 64
    assert sorted(p.name for p in fresh.iterdir()) == ["install.key"], "no temporary key file is left behind"


def test_cache_stays_under_its_size_bound(tmp_path: Path, ep_devices, env: Env) -> None:
    """Issue 7, defect 5 (size bound): least recently used entries are evicted after an insert."""
    models = [elementwise(tmp_path / f"m{i}.onnx", ["n", 4], middle=op) for i, op in enumerate(["Mul", "Add", "Sub"])]
    make_session(models[0], ep_devices, env.options, NO_FALLBACK)
    entry_bytes = sum(f.stat().st_size for f in _only_entry(env).rglob("*") if f.is_file())
    bound = entry_bytes * 5 // 2
    options = dict(env.options, cache_max_bytes=str(bound))
    stale, busy = env.cache_dir / ".tmp-died-abcdef", env.cache_dir / ".tmp-compiling-abcdef"
    for folder in (stale, busy):
        folder.mkdir()
        (folder / "model.onnx").write_bytes(b"\0" * entry_bytes)
    two_days_ago = time.time() - 2 * 86400
    os.utime(stale, (two_days_ago, two_days_ago))
    for model in models[1:]:
        make_session(model, ep_devices, options, NO_FALLBACK)
    assert not stale.exists() and busy.exists(), "only a day-old temporary folder is removed"
    total = sum(f.stat().st_size for e in env.cache_entries() for f in e.rglob("*") if f.is_file())
    assert len(env.cache_entries()) == 2 and total <= bound
    make_session(models[2], ep_devices, options, NO_FALLBACK)
    assert len(env.compiles()) == 3, "the newest entry was kept"
    with pytest.raises(Exception, match="cache_max_bytes must be a byte count"):
        make_session(models[0], ep_devices, dict(env.options, cache_max_bytes="lots"), NO_FALLBACK)


NO_MEMFD = """
import gc, glob, json, os, sys
import numpy as np, onnxruntime as ort, hipdnn_ep
so = ort.SessionOptions()
so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
so.add_provider_for_devices(hipdnn_ep.register(ort), {"cache_dir": sys.argv[2], "compiler_python": sys.argv[3]})
sess = ort.InferenceSession(sys.argv[1], sess_options=so)
x = np.ones((2, 4), np.float32)
result = sess.run(None, {"x": x, "y": x})[0].tolist()
maps = open("/proc/self/maps").read().splitlines()
copies = sorted({line.split()[-1] for line in maps if "hipdnn-ep-artifact" in line})
del sess
gc.collect()
left = glob.glob(os.path.join(os.environ["TMPDIR"], "hipdnn-ep-artifact-*"))
print(json.dumps({"result": result, "copies": copies, "left": left}))
"""


def test_without_memfd_the_verified_bytes_go_to_a_private_file(tmp_path: Path, ep_devices, env: Env) -> None:
    """Where memfd_create is unavailable (here: made to fail by an LD_PRELOAD shim), the verified bytes are
    loaded from a new file in a private temporary folder, removed when the session ends."""
    ctx = compile_ctx(tmp_path, ep_devices, env, embed=True)
    shim_src = tmp_path / "no_memfd.c"
    shim_src.write_text("#include <errno.h>\nint memfd_create(const char* name, unsigned flags) {\n"
                        "  (void)name; (void)flags; errno = ENOSYS; return -1;\n}\n")
    shim = tmp_path / "libno_memfd.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(shim), str(shim_src)], check=True)
    temp = tmp_path / "temp"
    temp.mkdir()
    out = subprocess.run([sys.executable, "-c", NO_MEMFD, str(ctx), str(env.cache_dir), str(tmp_path / "none")],
                         env=dict(os.environ, LD_PRELOAD=str(shim), TMPDIR=str(temp)), capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.splitlines()[-1])
    assert seen["result"] == reference(np.ones((2, 4)), np.ones((2, 4))).tolist()
    (copy,) = seen["copies"]
    assert copy.startswith(f"{temp}/hipdnn-ep-artifact-") and copy.endswith("/program.so")
    assert seen["left"] == [], "the private copy is removed with the session"


# ---- issue 19: a local attacker who may write an ancestor of the cache folder, or owns HOME ----


def _plant_source(tmp_path: Path) -> tuple[Path, Path]:
    """A bare shared object that creates a marker file when it is loaded (the attacker's code)."""
    marker = tmp_path / "planted-code-ran"
    src = tmp_path / "planted.c"
    src.write_text("#include <stdio.h>\n"
                   "__attribute__((constructor)) static void planted(void) {\n"
                   f'  FILE* f = fopen("{marker}", "w");\n  if (f) fclose(f);\n}}\n'
                   "int hipdnn_ep_program_run(void* state, const void* in, void* out) { return 0; }\n")
    bare = tmp_path / "planted-bare.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(bare), str(src)], check=True)
    return bare, marker


def test_cache_folder_swapped_during_a_session_does_not_redirect_it(tmp_path: Path, ep_devices, env: Env) -> None:
    """Issue 19, item 1: once the first entry of a session was published, another user who may write an
    ancestor of the cache renamed the 0700 folder and put a symlink to his own folder in its place; the EP
    read the compiler's next output through the path, from his folder, signed it with the install key and
    loaded it.  Now every access goes through the descriptor of the folder opened at the start: the swap
    redirects nothing, and a later session refuses the symlink."""
    bare, marker = _plant_source(tmp_path)
    cache, moved, attacker = tmp_path / "home" / "cache", tmp_path / "home" / "cache-moved", tmp_path / "attacker"
    cache.parent.mkdir()
    spy = _spy_python(tmp_path, attack={"cache": str(cache), "moved": str(moved), "attacker": str(attacker),
                                        "plant": str(bare)})
    options = dict(env.options, cache_dir=str(cache), compiler_python=str(spy))
    model = elementwise(tmp_path / "m.onnx", ["n", 4], middle=UNSUPPORTED)  # two partitions: two compiles
    sess = make_session(model, ep_devices, options)
    assert cache.is_symlink(), "the attack took place"
    assert not marker.exists(), "the attacker's code ran"
    x = np.full((2, 4), 0.5, np.float32)
    np.testing.assert_allclose(sess.run(None, {"x": x, "y": x})[0], np.maximum((x + x) + x, 0),
                               rtol=1e-6)
    assert len([e for e in moved.iterdir() if (e / "entry.json").is_file()]) == 2, "both entries are in the cache"
    assert not list(attacker.rglob("entry.json")), "nothing was published into the attacker's folder"
    with pytest.raises(Exception, match="compile cache .* is a symbolic link"):
        make_session(model, ep_devices, options)
    assert not marker.exists()


def test_compiler_output_of_another_user_is_not_signed(tmp_path: Path, ep_devices, env: Env) -> None:
    """Issue 19, item 1: the compiler's output was signed and loaded whoever owned it.  It is read through
    the EP's descriptor of the build folder and must be a regular file of this user."""
    if os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    spy = _spy_python(tmp_path, attack={"give_output_to": 4321})
    options = dict(env.options, compiler_python=str(spy))
    with pytest.raises(Exception, match="refusing the compiler's artifact .*program.so: it belongs to user id 4321"):
        make_session(elementwise(tmp_path / "m.onnx", ["n", 4]), ep_devices, options, NO_FALLBACK)
    assert env.cache_entries() == [], "nothing was published"


def _foreign_home(tmp_path: Path) -> Path:
    if os.geteuid() != 0:
        pytest.skip("giving a folder to another user needs root")
    home = tmp_path / "alice"
    (home / ".cache").mkdir(parents=True)
    for folder in (home, home / ".cache"):
        os.chown(folder, 4321, 4321)
    return home


def test_default_cache_under_a_foreign_home_is_replaced(tmp_path: Path, ep_devices, env: Env,
                                                        monkeypatch: pytest.MonkeyPatch, capfd) -> None:
    """Issue 19, item 1: with `sudo -E` (HOME of another user) the default cache was created in that user's
    home, where he can swap it.  The default location is replaced by the private per-user folder in the
    temporary directory, with a warning."""
    home = _foreign_home(tmp_path)
    for name in ("XDG_CACHE_HOME", "HIPDNN_EP_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    options = {k: v for k, v in env.options.items() if k != "cache_dir"}
    _runs(make_session(elementwise(tmp_path / "m.onnx", ["n", 4]), ep_devices, options, NO_FALLBACK))
    assert list((home / ".cache").iterdir()) == [], "nothing is created in the other user's home"
    mine = tmp_path / f"hipdnn-ep-cache-{os.geteuid()}"
    assert (mine / "install.key").is_file()
    err = capfd.readouterr().err
    assert "belongs to user id 4321" in err and str(mine) in err, err
    # XDG_CACHE_HOME of another user: the same.
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    _runs(make_session(elementwise(tmp_path / "m.onnx", ["n", 4]), ep_devices, options, NO_FALLBACK))
    assert list((home / ".cache").iterdir()) == []


@pytest.mark.parametrize("how", ["option", "environment"])
def test_named_cache_under_a_foreign_home_is_refused(tmp_path: Path, ep_devices, env: Env,
                                                     monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """Issue 19, item 1: a cache the user named explicitly under a folder another user owns is refused (that
    user could swap it), not silently moved."""
    home = _foreign_home(tmp_path)
    named = home / ".cache" / "hipdnn-ep"
    options = {k: v for k, v in env.options.items() if k != "cache_dir"}
    if how == "option":
        options["cache_dir"] = str(named)
    else:
        monkeypatch.setenv("HIPDNN_EP_CACHE_DIR", str(named))
    with pytest.raises(Exception, match=f"refusing the compile cache folder {named}: .*{home}.* belongs to user id "
                                        "4321.*cache_dir"):
        make_session(elementwise(tmp_path / "m.onnx", ["n", 4]), ep_devices, options, NO_FALLBACK)
    assert not named.exists()


SESSION = """
import json, sys
import onnxruntime as ort, hipdnn_ep
so = ort.SessionOptions()
so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
so.add_provider_for_devices(hipdnn_ep.register(ort), json.loads(sys.argv[2]))
ort.InferenceSession(sys.argv[1], sess_options=so, enable_fallback=0)
print("created")
"""


def _session_in_child(model: Path, options: dict, timeout: float = 40) -> subprocess.CompletedProcess:
    """A session made in a new process (nothing kept in memory from earlier sessions); a process that
    blocks is killed after `timeout` seconds and fails the test."""
    return subprocess.run([sys.executable, "-c", SESSION, str(model), json.dumps(options)], capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.parametrize("which", ["install.key", "program.so", "entry.json", "support", "compilers"])
def test_fifo_in_the_cache_does_not_block(tmp_path: Path, ep_devices, env: Env, which: str) -> None:
    """Issue 19, item 3: a FIFO in place of install.key or of a cached file made session creation wait
    forever for a writer.  Files are opened without blocking and anything but a regular file is refused:
    a damaged cache file is read again from the compiler, a FIFO key is an error."""
    model = elementwise(tmp_path / "m.onnx", ["n", 4])
    first = _session_in_child(model, env.options, timeout=120)  # keeps its verdicts and capabilities on disk
    assert first.returncode == 0, first.stderr
    paths = {"install.key": [env.cache_dir / "install.key"],
             "program.so": [_only_entry(env) / "artifact" / "program.so"],
             "entry.json": [_only_entry(env) / "entry.json"],
             "support": list((env.cache_dir / "support").glob("*.json")),
             "compilers": list((env.cache_dir / "compilers").glob("*.json"))}[which]
    assert paths, f"the first session kept no {which} file"
    for path in paths:
        path.unlink()
        os.mkfifo(path, 0o600)
    started = time.monotonic()
    out = _session_in_child(model, env.options)
    assert time.monotonic() - started < 30
    if which == "install.key":
        assert out.returncode != 0 and "install key" in out.stderr and "not a regular file" in out.stderr, out.stderr
    else:
        assert out.returncode == 0 and out.stdout.strip() == "created", out.stderr


def test_oversized_epcontext_artifact_is_refused_before_reading(tmp_path: Path, ep_devices, env: Env) -> None:
    """Issue 19, item 3: a sparse 4 GiB program.so beside an EPContext model was read whole (29 s, 4 GiB of
    memory) before its tag was checked.  A file above the artifact bound (1 GiB) is refused at once."""
    ctx = compile_ctx(tmp_path, ep_devices, env, embed=False)
    code = tmp_path / _attr(_context_node(onnx.load(str(ctx))), "ep_cache_context").s.decode()
    with open(code, "r+b") as f:
        f.truncate((1 << 30) + 1)  # sparse: no disk space
    started = time.monotonic()
    with pytest.raises(Exception, match="1073741825 bytes.*more than the 1073741824.*an artifact may have"):
        make_session(ctx, ep_devices, env.options, NO_FALLBACK)
    assert time.monotonic() - started < 5


def test_oversized_cached_artifact_is_compiled_again(tmp_path: Path, ep_devices, env: Env) -> None:
    """Issue 19, item 3: the same bound for a cached program.so: the entry is evicted without reading it."""
    model = elementwise(tmp_path / "m.onnx", ["n", 4])
    make_session(model, ep_devices, env.options, NO_FALLBACK)
    with open(_only_entry(env) / "artifact" / "program.so", "r+b") as f:
        f.truncate((1 << 30) + 1)
    started = time.monotonic()
    _runs(make_session(model, ep_devices, env.options, NO_FALLBACK))
    assert time.monotonic() - started < 30
    assert len(env.compiles()) == 2


def test_non_embedded_epcontext_loaded_from_bytes_is_refused(tmp_path: Path, ep_devices, env: Env,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 19, item 3: an EPContext model whose code is in a file, loaded from bytes, resolved that file
    against the process's current folder (whatever happened to be there).  It has no folder: refused."""
    ctx = compile_ctx(tmp_path, ep_devices, env, embed=False)
    monkeypatch.chdir(tmp_path)  # where the artifact's relative path would resolve
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    so.add_provider_for_devices(ep_devices, env.options)
    with pytest.raises(Exception, match="loaded from bytes.*load the model from its file.*context_embed_mode=1"):
        ort.InferenceSession(ctx.read_bytes(), sess_options=so, enable_fallback=0)
    _runs(make_session(ctx, ep_devices, env.options, NO_FALLBACK))  # from its path it loads
