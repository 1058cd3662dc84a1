"""Graph capture and replay of compiled programs on a GPU state (graph_cache.h).

The artifacts come from tools/gpu/gpu_artifacts.py (--gpu-artifacts). Inputs and weights live in device
memory the test allocates once, as a host such as the EP keeps them, and every run goes through
hipdnn_ep_artifact_run. A state with graphs on must give what a state with graphs off gives (the
same kernels: within 1e-6 of the output's scale) and what the cpu backend gives (the tolerance of
test_gpu_artifacts.py), on the run that captures and on replays with new input values.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import ALLOC_FN, OutputAllocator, TensorRef

np = pytest.importorskip("numpy")
rt = pytest.importorskip("hipdnn_ep_runtime")

pytestmark = pytest.mark.gpu

H2D, D2H = 1, 2
DTYPES = {np.dtype(np.float32): 1, np.dtype(np.float16): 10, np.dtype(np.int64): 7, np.dtype(np.int32): 6,
          np.dtype(np.bool_): 9, np.dtype(np.uint8): 2}


def _lib() -> ctypes.CDLL:
    lib = ctypes.CDLL(rt.library_path())
    lib.hipdnn_ep_last_error.restype = ctypes.c_char_p
    lib.hipdnn_ep_artifact_open.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.hipdnn_ep_artifact_run.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(TensorRef),
                                           ctypes.POINTER(TensorRef)]
    lib.hipdnn_ep_artifact_close.argtypes = [ctypes.c_void_p]
    lib.hipdnn_ep_free.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    return lib


class Runner:
    """An artifact on one state with device-resident inputs and weights (uploaded once, rewritten in place)."""

    def __init__(self, lib: ctypes.CDLL, directory: Path, state: rt.State, arrays: list[np.ndarray]) -> None:
        self.lib, self.state = lib, state
        self.handle = ctypes.c_void_p()
        assert lib.hipdnn_ep_artifact_open(str(directory / "program.so").encode(), ctypes.byref(self.handle)) == 0, \
            lib.hipdnn_ep_last_error()
        with rt.Artifact(directory) as artifact:
            self.n_outputs = len(artifact.metadata["outputs"])
        self.refs = (TensorRef * len(arrays))()
        self.ptrs: list[int] = []
        self.keep: list[object] = []
        self.sizes: list[int] = []
        for i, a in enumerate(arrays):
            self.ptrs.append(state.malloc(max(a.nbytes, 1)))
            self.sizes.append(a.nbytes)
            self.set_input(i, a)

    def set_input(self, i: int, a: np.ndarray) -> None:
        """Writes a into input i's buffer (same byte size or smaller), with its shape."""
        a = np.array(a, order="C")
        assert a.nbytes <= max(self.sizes[i], 1)
        self.state.memcpy(self.ptrs[i], a.ctypes.data, a.nbytes, H2D)
        dims = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
        self.keep.append(dims)
        self.refs[i] = TensorRef(self.ptrs[i], dims, a.ndim, DTYPES[a.dtype])

    def launch(self) -> ctypes.Array:
        """hipdnn_ep_artifact_run alone (asserted to succeed): the outputs stay on the device."""
        out = (TensorRef * self.n_outputs)()
        assert self.lib.hipdnn_ep_artifact_run(self.handle, ctypes.c_void_p(self.state._handle()), self.refs,
                                               out) == 0, self.lib.hipdnn_ep_last_error()
        return out

    def free(self, out: ctypes.Array) -> None:
        for o in out:
            self.lib.hipdnn_ep_free(ctypes.c_void_p(self.state._handle()), o.data)

    def run(self) -> list[np.ndarray]:
        out = self.launch()
        results = []
        try:
            for o in out:
                shape = tuple(o.dims[d] for d in range(o.rank))
                dtype = next(k for k, v in DTYPES.items() if v == o.dtype)
                host = np.empty(shape, dtype)
                if host.nbytes:
                    self.state.memcpy(host.ctypes.data, o.data, host.nbytes, D2H)
                results.append(host)
        finally:
            self.free(out)
        return results

    def close(self) -> None:
        for p in self.ptrs:
            self.state.free(p)
        self.lib.hipdnn_ep_artifact_close(self.handle)


def _artifact(config: pytest.Config, name: str) -> Path:
    directory = Path(config.getoption("--gpu-artifacts")) / name
    if not (directory / "program.so").exists():
        pytest.skip(f"no artifact {name}: run tools/gpu/gpu_artifacts.py (or pass --gpu-artifacts)")
    return directory


def _feeds(directory: Path) -> tuple[list[str], list[np.ndarray], dict[str, list[np.ndarray]]]:
    feeds = np.load(directory / "feeds.npz")
    weights = [feeds[f"weight/{i}"] for i in range(sum(k.startswith("weight/") for k in feeds.files))]
    with rt.Artifact(directory) as artifact:
        names = [i["name"] for i in artifact.metadata["inputs"]]
    labels = sorted({k.split("/")[0] for k in feeds.files if not k.startswith("weight/")})
    return labels, weights, {label: [feeds[f"{label}/{n}"] for n in names] for label in labels}


def _close(actual: list[np.ndarray], expected: list[np.ndarray], rtol: float, atol_scale: float, what: str) -> None:
    assert len(actual) == len(expected), what
    for a, e in zip(actual, expected, strict=True):
        assert a.shape == e.shape and a.dtype == e.dtype, what
        scale = float(np.max(np.abs(e.astype(np.float64)))) if e.size else 0.0
        np.testing.assert_allclose(a, e, rtol=rtol, atol=max(1e-6, atol_scale * scale), err_msg=what)


def _perturbed(inputs: list[np.ndarray], seed: int) -> list[np.ndarray]:
    """New values, same shapes: float inputs get noise, integer ones stay (they may be masks or ids)."""
    rng = np.random.default_rng(seed)
    return [x + rng.standard_normal(x.shape).astype(x.dtype) if x.dtype.kind == "f" else x for x in inputs]


@pytest.mark.parametrize("name", ["three_node", "attention_seq128", "attention_dynamic", "shape_chain_dynamic"])
def test_replay_matches_the_uncaptured_run_and_cpu(request: pytest.FixtureRequest, gpu_backend: str, name: str) -> None:
    directory = _artifact(request.config, name)
    labels, weights, by_label = _feeds(directory)
    lib = _lib()
    with rt.Artifact(directory) as artifact, rt.State(backend="cpu") as cpu, \
            rt.State(backend=gpu_backend) as graphs, rt.State(backend=gpu_backend, graph_capture=False) as plain:
        for label in labels:
            first = by_label[label]
            a = Runner(lib, directory, graphs, first + weights)
            b = Runner(lib, directory, plain, first + weights)
            for k in range(5):  # run 0 plain, run 1 captures, runs 2.. replay; new values from run 3 on
                inputs = first if k < 3 else _perturbed(first, k)
                for i, x in enumerate(inputs):
                    a.set_input(i, x)
                    b.set_input(i, x)
                got, want = a.run(), b.run()
                what = f"{name} {label} run {k}"
                _close(got, want, 1e-6, 1e-6, what + " (graphs vs no graphs)")
                _close(got, artifact.run(cpu, inputs + weights), 1e-4, 2e-5, what + " (vs cpu)")
            a.close()
            b.close()
            graphs.synchronize()
        stats = graphs.graph_stats()
        assert stats["captures"] == len(labels), stats
        assert stats["replays"] == 3 * len(labels), stats
        assert plain.graph_stats()["last_uncaptured"] == "graph capture is off for this state"
        assert plain.graph_stats()["captures"] == 0


def test_graph_cache_is_bounded_and_freed(request: pytest.FixtureRequest, gpu_backend: str) -> None:
    directory = _artifact(request.config, "attention_dynamic")
    labels, weights, by_label = _feeds(directory)
    lib = _lib()
    with rt.Artifact(directory) as artifact, rt.State(backend="cpu") as cpu:
        state = rt.State(backend=gpu_backend, graph_cache_size=1)
        runners = {label: Runner(lib, directory, state, by_label[label] + weights) for label in labels[:2]}
        for label in [labels[0]] * 3 + [labels[1]] * 3 + [labels[0]] * 3:
            _close(runners[label].run(), artifact.run(cpu, by_label[label] + weights), 1e-4, 2e-5, label)
        stats = state.graph_stats()
        # each shape captured on its second run, replayed on its third; the cache keeps one graph
        assert (stats["captures"], stats["replays"], stats["graphs_cached"], stats["evictions"]) == (3, 3, 1, 2), stats
        for r in runners.values():
            r.close()
        state.synchronize()
        state.close()  # raises LeakError if a graph's blocks were not given back


def test_host_reads_are_run_without_a_graph(request: pytest.FixtureRequest, gpu_backend: str) -> None:
    directory = _artifact(request.config, "reshape_target_input")
    labels, weights, by_label = _feeds(directory)
    lib = _lib()
    with rt.Artifact(directory) as artifact, rt.State(backend="cpu") as cpu, rt.State(backend=gpu_backend) as gpu:
        for label in labels:
            r = Runner(lib, directory, gpu, by_label[label] + weights)
            for _ in range(3):
                _close(r.run(), artifact.run(cpu, by_label[label] + weights), 1e-6, 1e-6, label)
            r.close()
        stats = gpu.graph_stats()
        assert (stats["captures"], stats["replays"], stats["graphs_cached"]) == (0, 0, 0), stats
        assert "reads device data on the host" in stats["last_uncaptured"], stats
        assert stats["uncaptured_runs"] == 3 * len(labels)


def _with(inputs: list[np.ndarray], index: int, where: tuple[int, ...] | slice, value: int) -> list[np.ndarray]:
    changed = [x.copy() for x in inputs]
    changed[index][where] = value
    return changed


# Programs whose kernels check data on the device (tools/gpu/gpu_artifacts.py), and bad data for each.
CHECKED: dict[str, Callable[[list[np.ndarray]], list[np.ndarray]]] = {
    "embedding_dynamic": lambda x: _with(x, 0, (0, 3), 50),  # a token id past the 50-row table
    "int_division_dynamic": lambda x: _with(x, 1, (4,), 0),  # a zero divisor
    "llm_decode_shared_kv": lambda x: _with(x, 1, slice(None), 0),  # an all-zero attention mask: seqlens_k -1
    "llm_rotary_dynamic": lambda x: _with(x, 2, slice(None), 16),  # a position past the 16-position cache
}


def _kernel_message(text: str) -> str:
    """The failing kernel's part of a message (the CPU backend's run adds the program's path before it)."""
    assert "hipdnn_ep_kernel_" in text, text
    return text[text.index("hipdnn_ep_kernel_"):]


@pytest.mark.parametrize("name", list(CHECKED))
def test_programs_that_check_their_data_are_captured(request: pytest.FixtureRequest, gpu_backend: str,
                                                     name: str) -> None:
    """Their kernels record bad data on the device and never wait, so the program is captured; a replay
    fed bad data fails at the run's wait (or at the first copy to the host) with the CPU backend's
    message, and the next replay with good data is right."""
    directory = _artifact(request.config, name)
    labels, weights, by_label = _feeds(directory)
    lib = _lib()
    good = by_label[labels[0]]
    bad = CHECKED[name](good)
    with rt.Artifact(directory) as artifact, rt.State(backend="cpu") as cpu, rt.State(backend=gpu_backend) as gpu, \
            rt.State(backend=gpu_backend, graph_capture=False) as plain:
        expected = artifact.run(cpu, good + weights)
        with pytest.raises(rt.InvalidArgumentError) as cpu_error:
            artifact.run(cpu, bad + weights)
        message = _kernel_message(str(cpu_error.value))
        r = Runner(lib, directory, gpu, good + weights)
        for k in range(3):  # a plain run, the capture, a replay
            _close(r.run(), expected, 1e-4, 2e-5, f"{name} run {k}")
        stats = gpu.graph_stats()
        assert (stats["captures"], stats["replays"]) == (1, 1), stats["last_uncaptured"]

        def set_inputs(runner: Runner, inputs: list[np.ndarray]) -> None:
            for i, x in enumerate(inputs):
                runner.set_input(i, x)

        set_inputs(r, bad)
        out = r.launch()  # the replay does not wait for its kernels
        with pytest.raises(rt.InvalidArgumentError) as gpu_error:
            gpu.synchronize()
        assert _kernel_message(str(gpu_error.value)) == message
        r.free(out)
        gpu.synchronize()  # reported once
        with pytest.raises(rt.InvalidArgumentError) as gpu_error:
            r.run()  # the copy of the outputs to the host refuses them
        assert _kernel_message(str(gpu_error.value)) == message
        set_inputs(r, good)
        _close(r.run(), expected, 1e-4, 2e-5, f"{name} after the bad data")
        gpu.synchronize()
        stats = gpu.graph_stats()
        assert (stats["captures"], stats["replays"], stats["uncaptured_runs"]) == (1, 4, 1), stats

        # Without graphs the run does not wait either: the same message at the wait.
        p = Runner(lib, directory, plain, bad + weights)
        out = p.launch()
        with pytest.raises(rt.InvalidArgumentError) as gpu_error:
            plain.synchronize()
        assert _kernel_message(str(gpu_error.value)) == message
        p.free(out)
        set_inputs(p, good)
        _close(p.run(), expected, 1e-4, 2e-5, f"{name} without graphs")
        r.close()
        p.close()
        gpu.synchronize()
        plain.synchronize()


def test_a_kv_cache_bound_as_past_and_present_is_updated_in_place(request: pytest.FixtureRequest,
                                                                  gpu_backend: str) -> None:
    """The host places present.* on the past_key_values.* memory (onnxruntime-genai's shared buffer): the
    graph uses that memory in place, as the run without a graph does, instead of copying the cache in and
    out on every replay; when the host places an output elsewhere, the run is made without the graph."""
    directory = _artifact(request.config, "llm_decode_shared_kv")
    labels, weights, by_label = _feeds(directory)
    lib = _lib()
    lib.hipdnn_ep_artifact_run_into.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(TensorRef),
                                                ctypes.POINTER(TensorRef), ctypes.POINTER(OutputAllocator)]
    with rt.Artifact(directory) as artifact, rt.State(backend="cpu") as cpu, rt.State(backend=gpu_backend) as gpu:
        names = [i["name"] for i in artifact.metadata["inputs"]]
        out_names = [o["name"] for o in artifact.metadata["outputs"]]
        feeds = by_label[labels[0]]
        expected = artifact.run(cpu, feeds + weights)
        r = Runner(lib, directory, gpu, feeds + weights)
        spare = {n: gpu.malloc(e.nbytes) for n, e in zip(out_names, expected, strict=True)}
        places: dict[int, int] = {}

        @ALLOC_FN
        def alloc(_context, index, _ref, _size, out):  # the host's allocator, called from C
            out[0] = places[index]
            return 0

        allocator = OutputAllocator(ctypes.sizeof(OutputAllocator), alloc, None)

        def step(in_place: bool, what: str) -> None:
            for i, x in enumerate(feeds):  # the cache as the feeds have it (past 5 positions)
                r.set_input(i, x)
            for j, n in enumerate(out_names):
                cache = n.replace("present.", "past_key_values.")
                places[j] = r.ptrs[names.index(cache)] if in_place and cache in names else spare[n]
            out = (TensorRef * len(out_names))()
            assert lib.hipdnn_ep_artifact_run_into(r.handle, ctypes.c_void_p(gpu._handle()), r.refs, out,
                                                   ctypes.byref(allocator)) == 0, lib.hipdnn_ep_last_error()
            assert [o.data for o in out] == [places[j] for j in range(len(out_names))], what
            gpu.synchronize()
            for j, e in enumerate(expected):
                got = np.empty_like(e)
                gpu.memcpy(got.ctypes.data, places[j], e.nbytes, D2H)
                _close([got], [e], 1e-4, 2e-5, f"{what}: {out_names[j]}")

        for k in range(4):  # a plain run, the capture, two replays
            step(True, f"in place, run {k}")
        stats = gpu.graph_stats()
        assert (stats["captures"], stats["replays"]) == (1, 2), stats["last_uncaptured"]
        step(False, "present placed elsewhere")
        stats = gpu.graph_stats()
        assert stats["replays"] == 2 and "elsewhere" in stats["last_uncaptured"], stats
        step(True, "in place again")
        assert gpu.graph_stats()["replays"] == 3
        for p in spare.values():
            gpu.free(p)
        r.close()
        gpu.synchronize()
