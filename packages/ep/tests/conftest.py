"""Fixtures: the plugin registered with onnxruntime, running the real
hipdnn-ep-compiler and hipdnn-ep-runtime wheels of the test environment.

The compiler is started through a recording wrapper (support/spy_compiler.py)
so that tests can see which graphs the EP compiled; the compile itself is the
real one.  The only stand-ins are those for conditions the real wheels cannot
produce: a runtime reporting another ABI (a shim over the real runtime, see
`runtime_reporting_abi`) and compilers that are missing, crash or answer
garbage (tiny scripts, see `broken_compiler`)."""

from __future__ import annotations

import atexit
import contextlib
import json
import shutil
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import hipdnn_ep
import hipdnn_ep_runtime
import onnx
import onnxruntime as ort
import pytest

TESTS = Path(__file__).resolve().parent
SPY = TESTS / "support" / "spy_compiler.py"
NO_FALLBACK = {"session.disable_cpu_ep_fallback": "1"}
# The spy compilers record into the folder named in this file (one compiler process serves
# many tests: it reads the file on every request).
LOG_POINTER = Path(tempfile.mkdtemp(prefix="hipdnn-ep-test-log-")) / "log-dir"
atexit.register(shutil.rmtree, LOG_POINTER.parent, True)


@contextlib.contextmanager
def compile_log(folder: Path):
    """Spy compilers record into `folder` while the context is open."""
    LOG_POINTER.write_text(str(folder))
    try:
        yield folder
    finally:
        LOG_POINTER.write_text("")


def pytest_report_header(config: pytest.Config) -> list[str]:
    import hipdnn_ep_compiler

    return [f"onnxruntime {ort.__version__}, hipdnn_ep library {hipdnn_ep.get_library_path()}",
            f"hipdnn-ep-compiler {hipdnn_ep_compiler.__version__}, runtime {hipdnn_ep_runtime.library_path()} "
            f"(ABI {hipdnn_ep_runtime.abi_version()})"]


def _script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _spy_python(folder: Path, capabilities: dict | None = None, environ: dict[str, str] | None = None,
                attack: dict | None = None) -> Path:
    """An 'interpreter' for the option compiler_python: the spy under the real Python,
    with `capabilities` replacing fields of the compiler's capabilities answer, `environ`
    set for the spy and `attack` the plan of a local attacker (see support/spy_compiler.py)."""
    prefix = f"HIPDNN_EP_TEST_COMPILE_LOG_POINTER='{LOG_POINTER}' "
    prefix += f"HIPDNN_EP_TEST_CAPABILITIES='{json.dumps(capabilities)}' " if capabilities else ""
    prefix += "".join(f"{k}='{v}' " for k, v in (environ or {}).items())
    prefix += f"HIPDNN_EP_TEST_ATTACK='{json.dumps(attack)}' " if attack else ""
    return _script(folder / "python-spy", f'{prefix}exec "{sys.executable}" "{SPY}" "$@"')


@pytest.fixture
def make_spy_python(tmp_path: Path):
    """A spy 'interpreter' of its own (so a compiler process of its own) with the given
    environment for the spy, e.g. {"HIPDNN_EP_TEST_HOLD_DIR": folder}."""
    count = iter(range(1000))

    def make(environ: dict[str, str]) -> Path:
        folder = tmp_path / f"spy-{next(count)}"
        folder.mkdir()
        return _spy_python(folder, environ=environ)

    return make


@pytest.fixture(scope="session")
def spy_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _spy_python(tmp_path_factory.mktemp("spy"))


@pytest.fixture(scope="session")
def spy_python_other_version(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real compiler, announcing another version (as a new release would)."""
    import hipdnn_ep_compiler

    return _spy_python(tmp_path_factory.mktemp("spy-other"),
                       {"compiler_version": hipdnn_ep_compiler.__version__ + "+other"})


@pytest.fixture(scope="session")
def spy_python_abi2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real compiler, announcing that it targets runtime ABI 2.0 and 2.1 only."""
    return _spy_python(tmp_path_factory.mktemp("spy-abi2"), {"abi": {"major": 2, "minors": [0, 1]}})


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One compile cache for the tests that do not count compiles: identical graphs compile once."""
    return tmp_path_factory.mktemp("shared-cache")


@pytest.fixture(scope="session")
def ep_devices() -> list:
    """This EP's OrtEpDevices (the library registered once per process)."""
    return hipdnn_ep.register(ort)


@dataclass(frozen=True)
class Env:
    """EP options (the spy as compiler, a cache folder) and what the compiler was asked."""

    options: dict[str, str]
    log_dir: Path
    cache_dir: Path

    def requests(self) -> list[dict]:
        log = self.log_dir / "requests.jsonl"
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

    def compiles(self) -> list[dict]:
        """The compile requests, in order."""
        return [r for r in self.requests() if r.get("action") == "compile"]

    def compiled_models(self) -> list[onnx.ModelProto]:
        """The subgraph models the EP sent to the compiler (external weights not loaded)."""
        return [onnx.load(r["model_copy"], load_external_data=False) for r in self.compiles()]

    def compiled_ops(self) -> list[list[str]]:
        return [[n.op_type for n in m.graph.node] for m in self.compiled_models()]

    def cache_entries(self) -> list[Path]:
        return sorted(p for p in self.cache_dir.iterdir() if (p / "entry.json").is_file())


def _env(tmp_path: Path, spy_python: Path, cache: Path):
    with compile_log(tmp_path / "compiler-log") as log:
        yield Env({"compiler_python": str(spy_python), "cache_dir": str(cache)}, log, cache)


@pytest.fixture
def env(tmp_path: Path, spy_python: Path):
    """A private compile cache: every graph of the test compiles on first use."""
    yield from _env(tmp_path, spy_python, tmp_path / "cache")


@pytest.fixture
def shared_env(tmp_path: Path, spy_python: Path, shared_cache: Path):
    """The session-wide compile cache (for tests that do not count compiles)."""
    yield from _env(tmp_path, spy_python, shared_cache)


@pytest.fixture(scope="session")
def runtime_reporting_abi(tmp_path_factory: pytest.TempPathFactory):
    """Builds a shim library that reports ABI `major.minor` and resolves every
    other runtime function to the real runtime (its dependency: dlsym on the
    shim's handle searches it too).  The shim has its own soname, so it never
    stands in for the real runtime that compiled programs link against."""
    folder = tmp_path_factory.mktemp("runtime-shims")
    real = Path(hipdnn_ep_runtime.library_path())
    built: dict[tuple[int, int], Path] = {}

    def build(major: int, minor: int) -> Path:
        if (major, minor) not in built:
            src = folder / f"shim_{major}_{minor}.c"
            src.write_text("#include <stdint.h>\n"
                           f"uint32_t hipdnn_ep_abi_version(void) {{ return ({major}u << 16) | {minor}u; }}\n")
            lib = folder / f"libruntime_shim_{major}_{minor}.so"
            subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib), str(src), f"-Wl,-soname,{lib.name}",
                            "-Wl,--no-as-needed", f"-L{real.parent}", f"-l:{real.name}", f"-Wl,-rpath,{real.parent}"],
                           check=True)
            built[(major, minor)] = lib
        return built[(major, minor)]

    return build


@pytest.fixture
def broken_compiler(tmp_path: Path):
    """An 'interpreter' for compiler_python whose compiler misbehaves in the named way."""
    bodies = {  # each reads one request, as a compiler serving requests would, and misbehaves
        "garbage": "read -r line; echo 'this is not JSON'; exec sleep 60",
        "crash": "read -r line; echo 'Segmentation fault in the compiler' >&2; kill -SEGV $$",
        "not-ok": "read -r line; echo '{\"protocol\": 2, \"ok\": false}'",
        "other-protocol": "read -r line; echo '{\"protocol\": 4, \"ok\": true, \"compiler_version\": \"9.0\"}'; "
                          "exec sleep 60",
        # what a compiler before 0.4.1 answers this EP's requests
        "refuses-protocol": "read -r line; echo '{\"protocol\": 2, \"ok\": false, \"error\": {\"kind\": "
                            "\"BadRequest\", \"message\": \"unsupported protocol 3; this compiler speaks 1, 2 "
                            "(upgrade the older of hipdnn-ep and hipdnn-ep-compiler)\"}}'",
        "hang": "read -r line; exec sleep 60",
        # an interpreter that has the compiler but not its dependencies
        "no-numpy": "echo \"ModuleNotFoundError: No module named 'numpy'\" >&2; exit 1",
        # answers that break packages/abi/protocol.toml: a retyped field, a missing one, a value out of range
        "retyped-field": "read -r line; echo '{\"protocol\": 3, \"ok\": true, \"compiler_version\": 9}'; "
                         "exec sleep 60",
        "missing-field": "read -r line; echo '{\"protocol\": 3, \"ok\": true, \"compiler_version\": \"9.0\"}'; "
                         "exec sleep 60",
        "oversized-value": "read -r line; echo '{\"protocol\": 3, \"ok\": true, \"compiler_version\": \"9.0\", "
                           "\"build_id\": \"b\", \"abi\": {\"major\": 18446744073709551616, \"minors\": [0]}}'; "
                           "exec sleep 60",
        "malformed-error": "read -r line; echo '{\"protocol\": 3, \"ok\": false, \"error\": {\"kind\": 5}}'",
    }

    def make(kind: str) -> Path:
        if kind in ("malformed-support", "malformed-compile"):
            # the real compiler, except that its answer to one action breaks packages/abi/protocol.toml
            action, broken = {"malformed-support": ("support", {"models": [{"nodes": [{"index": "0"}]}]}),
                              "malformed-compile": ("compile", {"artifact": 5})}[kind]
            program = (f"import json, sys\nfrom hipdnn_ep_compiler.protocol import handle\n"
                       f"for line in sys.stdin:\n"
                       f"    request = json.loads(line)\n"
                       f"    answer = handle(request)\n"
                       f"    if request.get('action') == {action!r}:\n"
                       f"        answer = dict(protocol=answer['protocol'], ok=True, **{broken!r})\n"
                       f"    print(json.dumps(answer), flush=True)\n")
            (tmp_path / f"{kind}.py").write_text(program)
            return _script(tmp_path / f"python-{kind}", f"exec '{sys.executable}' '{tmp_path / f'{kind}.py'}'")
        return _script(tmp_path / f"python-{kind}", bodies[kind])

    return make


def make_session(model: str | Path, devices: list, options: dict[str, str],
                 config: dict[str, str] | None = None, optimize: bool = True) -> ort.InferenceSession:
    """A session with this EP (and ORT's CPU EP for fallback)."""
    so = ort.SessionOptions()
    if not optimize:  # every node of the model reaches the EP (no constant folding or fusion first)
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    for k, v in (config or {}).items():
        so.add_session_config_entry(k, v)
    so.add_provider_for_devices(devices, options)
    # enable_fallback=0: onnxruntime 1.23's Python wrapper otherwise answers an EP that refuses the
    # session by retrying on the CPU EP alone, hiding the refusal under test.
    return ort.InferenceSession(str(model), sess_options=so, enable_fallback=0)


def cpu_session(model: str | Path) -> ort.InferenceSession:
    return ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])


