"""Artifact loader: refusals before any code loads, and a good artifact that runs."""

from __future__ import annotations

import ctypes
import re
import threading
import time
from pathlib import Path

import hipdnn_ep_runtime as rt
import numpy as np
import pytest
from conftest import ArtifactFactory, FakeArtifact, good_metadata, manifest_hash, manifest_import

RUNTIME = "{}.{}".format(*rt.abi_version())
MAJOR, MINOR = rt.abi_version()


def _inputs(n: int = 4) -> list[np.ndarray]:
    return [np.arange(n, dtype=np.float32), np.array([0.5], dtype=np.float32)]


def test_good_artifact_runs(make_artifact: ArtifactFactory, state: rt.State) -> None:
    built = make_artifact()
    with rt.Artifact(built.directory) as artifact:
        assert built.loaded
        assert artifact.metadata["compiler"]["version"] == "0.1.0"
        for n in (4, 9, 0):  # symbolic dim n: any size
            (y,) = artifact.run(state, _inputs(n))
            np.testing.assert_array_equal(y, 2 * np.arange(n, dtype=np.float32) + 0.5)
            assert y.dtype == np.float32
        stats = state.memory_stats()
        assert stats["live_allocations"] == 0, "inputs and outputs are freed after the run"
        assert stats["host_scratch_bytes"] > 0


def test_path_may_be_the_shared_object(make_artifact: ArtifactFactory, state: rt.State) -> None:
    built = make_artifact()
    artifact = rt.Artifact(str(built.directory / "program.so"))
    (y,) = artifact.run(state, _inputs())
    assert y.shape == (4,)
    artifact.close()
    with pytest.raises(rt.InvalidArgumentError, match="closed"):
        artifact.run(state, _inputs())


def _refused(make_artifact: ArtifactFactory, metadata: dict) -> str:
    return _refused_built(make_artifact(metadata))


def _refused_built(built: FakeArtifact) -> str:
    with pytest.raises(rt.AbiMismatchError) as err:
        rt.Artifact(built.directory)
    assert not built.loaded, "the artifact's code ran before the ABI check refused it"
    message = str(err.value)
    assert message.startswith(f"artifact {built.directory / 'program.so'} built by hipdnn-ep-compiler 0.1.0")
    assert f"cannot run on runtime ABI {RUNTIME}" in message
    assert message.count("Fix: ") == 1, "one fix per refusal"
    assert "Rebuild" not in message
    return message


RECOMPILE_HERE = ("Fix: recompile the model against this runtime: hipdnn-ep-compile MODEL.onnx -o DIR --manifest "
                  f"{Path(rt.__file__).parent / 'abi_manifest.json'}")


def test_refuses_missing_imports_before_loading(make_artifact: ArtifactFactory) -> None:
    meta = good_metadata()
    meta["abi"]["min_minor"] = MINOR
    meta["imports"] += [{"name": "hipdnn_ep_foo", "hash": "1a2b3c4d5e6f7a8b", "since": MINOR + 1},
                        {"name": "hipdnn_ep_bar", "hash": "0000000000000000"}]
    # The code really references the missing function: loading it would fail with `undefined symbol`.
    built = make_artifact(meta, extra_decl="extern int32_t hipdnn_ep_foo(hipdnn_ep_state_t*);",
                          extra_call="if (!state) return hipdnn_ep_foo(state);")
    message = _refused_built(built)
    assert (f"missing 2 required imports: [hipdnn_ep_foo (since {MAJOR}.{MINOR + 1}), hipdnn_ep_bar]"
            in message)
    # hipdnn_ep_bar states no minor: no runtime release is known to have it, so upgrading is no fix.
    assert "compiled against an ABI manifest that differs from this runtime's" in message
    assert message.endswith(RECOMPILE_HERE + " (the EP does this itself when it compiles)")
    assert "undefined symbol" not in message
    # What a user would have seen without the check:
    with pytest.raises(OSError, match="undefined symbol: hipdnn_ep_foo"):
        ctypes.CDLL(str(built.directory / "program.so"))


def test_refuses_signature_mismatch(make_artifact: ArtifactFactory) -> None:
    meta = good_metadata()
    meta["imports"][1]["hash"] = "1a2b3c4d5e6f7a8b"
    message = _refused(make_artifact, meta)
    runtime_hash = manifest_hash("hipdnn_ep_malloc")
    assert (f"signature mismatch: [hipdnn_ep_malloc: artifact expects 1a2b3c4d5e6f7a8b, runtime has {runtime_hash}]"
            in message)
    assert "missing" not in message
    assert RECOMPILE_HERE in message and "pip install" not in message


def test_refuses_an_import_of_a_newer_minor_with_the_runtime_to_install(make_artifact: ArtifactFactory) -> None:
    """The artifact's own min_minor is current, but one import is newer: only a newer runtime has it."""
    meta = good_metadata()
    meta["imports"].append({"name": "hipdnn_ep_foo", "hash": "1a2b3c4d5e6f7a8b", "since": MINOR + 1})
    message = _refused(make_artifact, meta)
    assert f"missing 1 required import: [hipdnn_ep_foo (since {MAJOR}.{MINOR + 1})]" in message
    assert message.endswith(f"Fix: pip install 'hipdnn-ep-runtime>={MAJOR}.{MINOR + 1},<{MAJOR + 1}'")


def test_refuses_newer_minor(make_artifact: ArtifactFactory) -> None:
    meta = good_metadata()
    meta["abi"]["min_minor"] = MINOR + 1
    message = _refused(make_artifact, meta)
    assert f"for runtime ABI {MAJOR}.{MINOR + 1} (needs >= {MAJOR}.{MINOR + 1})" in message
    assert message.endswith(f"Fix: pip install 'hipdnn-ep-runtime>={MAJOR}.{MINOR + 1},<{MAJOR + 1}'")


def test_refuses_other_major(make_artifact: ArtifactFactory) -> None:
    meta = good_metadata()
    meta["abi"] = {"major": MAJOR + 1, "min_minor": 0}
    message = _refused(make_artifact, meta)
    assert f"ABI major versions differ ({MAJOR + 1} vs {MAJOR})" in message
    assert message.endswith(f"Fix: recompile the model with a hipdnn-ep-compiler for runtime ABI major {MAJOR} "
                            f"(hipdnn-ep-compile MODEL.onnx -o DIR --abi {RUNTIME})")


def test_all_problems_in_one_message(make_artifact: ArtifactFactory) -> None:
    meta = good_metadata()
    meta["abi"]["min_minor"] = MINOR + 1
    meta["imports"][0]["hash"] = "ffffffffffffffff"
    meta["imports"].append({"name": "hipdnn_ep_foo", "hash": "1a2b3c4d5e6f7a8b"})
    message = _refused(make_artifact, meta)
    assert message.count("; ") >= 2
    assert "missing 1 required import: [hipdnn_ep_foo]" in message
    assert "signature mismatch: [hipdnn_ep_get_host_scratch_base" in message
    assert RECOMPILE_HERE in message


@pytest.mark.parametrize(
    ("metadata", "match"),
    [("not json {", "not a JSON object"), ("[1, 2]", "not a JSON object"),
     ('{"format": 1, "abi": {"major": 1}}', r"lacks abi.major, abi.min_minor or imports \(field 'abi.min_minor': "
                                            r"missing \(required\)\)"),
     # read through the schema's generated readers (packages/abi/metadata.toml), naming the field
     ('{"format": 1, "abi": {"major": "1", "min_minor": 0}, "imports": []}',
      r"lacks abi.major, abi.min_minor or imports \(field 'abi.major': expected an integer\)"),
     ('{"format": 1, "abi": {"major": 18446744073709551616, "min_minor": 0}, "imports": []}',  # out of int64's range
      r"\(field 'abi.major': expected an integer\)"),
     ('{"format": 1, "abi": {"major": 1, "min_minor": 0}, "imports": {}}', r"\(field 'imports': expected a list\)"),
     ('{"format": 1, "abi": {"major": 1, "min_minor": 0}, "imports": [{"name": "hipdnn_ep_malloc"}]}',
      r"metadata import without a name and hash \(field 'imports\[0\].hash': missing \(required\)\)"),
     ('{"format": 1, "abi": {"major": 1, "min_minor": 0}, "imports": [3]}',
      r"metadata import without a name and hash \(field 'imports\[0\]': expected an object\)")],
)
def test_malformed_metadata(make_artifact: ArtifactFactory, metadata: str, match: str) -> None:
    built = make_artifact(metadata)
    with pytest.raises(rt.InvalidArgumentError, match=match):
        rt.Artifact(built.directory)
    assert not built.loaded


@pytest.mark.parametrize("nested", ["[" * 50_000, '{"format": 2, "checks": ' + "[" * 100 + "]" * 100 + "}"],
                         ids=["50KB-of-[", "deep-field"])
def test_deeply_nested_metadata_is_refused(make_artifact: ArtifactFactory, nested: str) -> None:
    """Metadata is parsed with a nesting bound (64) before anything of it is read or loaded."""
    built = make_artifact(nested)
    with pytest.raises(rt.InvalidArgumentError, match="not a JSON object.*nested more than 64 levels deep"):
        rt.Artifact(built.directory)
    assert not built.loaded


def test_malformed_tensor_lists(make_artifact: ArtifactFactory) -> None:
    meta = good_metadata()
    meta["inputs"] = [{"name": "x", "dims": [1]}]
    built = make_artifact(meta)
    with pytest.raises(rt.InvalidArgumentError, match="malformed"):
        rt.Artifact(built.directory)
    assert not built.loaded


@pytest.mark.parametrize(("edit", "field"), [
    (lambda m: m["outputs"][0].__setitem__("dtype", "float"), "field 'outputs[0].dtype': expected an integer"),
    (lambda m: m["inputs"][0]["dims"].append(None), "field 'inputs[0].dims[1]': expected a size"),
    (lambda m: m.__setitem__("kernel_nodes", [1]), "field 'kernel_nodes[0]': expected a string"),
    (lambda m: m.pop("memory_plan"), "field 'memory_plan': missing (required)"),
])
def test_metadata_is_read_through_the_declared_schema(make_artifact: ArtifactFactory, edit, field: str) -> None:
    """packages/abi/metadata.toml's generated reader: a declared field of another type is refused, naming it."""
    meta = good_metadata()
    edit(meta)
    built = make_artifact(meta)
    with pytest.raises(rt.InvalidArgumentError, match=re.escape(f"malformed metadata: {field}")):
        rt.Artifact(built.directory)
    assert not built.loaded


def test_fields_of_a_newer_minor_are_read_past(make_artifact: ArtifactFactory) -> None:
    meta = good_metadata()
    meta["a_field_of_a_newer_minor"] = {"any": ["thing"]}
    assert rt.Artifact(make_artifact(meta).directory) is not None


def test_missing_file_and_non_artifacts(tmp_path: Path) -> None:
    with pytest.raises(rt.NotFoundError, match="cannot open"):
        rt.Artifact(tmp_path / "nowhere")
    text = tmp_path / "program.so"
    text.write_text("not an ELF file at all, just text " * 10)
    with pytest.raises(rt.InvalidArgumentError, match="no ELF magic"):
        rt.Artifact(tmp_path)
    with pytest.raises(rt.InvalidArgumentError, match="has no .hipdnn_ep_meta section"):
        rt.Artifact(rt.library_path())


def test_run_validates_inputs(make_artifact: ArtifactFactory, state: rt.State) -> None:
    artifact = rt.Artifact(make_artifact().directory)
    with pytest.raises(rt.InvalidArgumentError, match="expected 2 arrays"):
        artifact.run(state, _inputs()[:1])
    x, w = _inputs()
    with pytest.raises(rt.InvalidArgumentError, match=r"input 0 'x': dtype 11 \(float64\) differs .* 1 \(float32\)"):
        artifact.run(state, [x.astype(np.float64), w])
    # dims as the metadata spells them (a dynamic one by its name there), not as "?"
    with pytest.raises(rt.InvalidArgumentError, match=r"input 0 'x': rank 2 differs from the artifact's 1 \[n\]"):
        artifact.run(state, [x.reshape(2, 2), w])
    wrong_dim = r"input 1 'w': dim 0 is 2 but the artifact was compiled for \[1\]"
    with pytest.raises(rt.InvalidArgumentError, match=wrong_dim):
        artifact.run(state, [x, np.zeros(2, np.float32)])
    with pytest.raises(rt.InvalidArgumentError, match="unsupported array element type"):
        artifact.run(state, [x.astype(np.complex64), w])
    assert state.memory_stats()["live_allocations"] == 0, "refused runs free their input copies"


def test_an_output_off_its_declared_dims_is_refused_and_freed(make_artifact: ArtifactFactory,
                                                              state: rt.State) -> None:
    """Metadata that declares an output dim its program does not produce (a damaged artifact): the run is
    refused naming the dim, and the outputs the program allocated are freed."""
    meta = good_metadata()
    meta["outputs"][0]["dims"] = [5]
    artifact = rt.Artifact(make_artifact(meta).directory)
    with pytest.raises(rt.HipdnnEpError, match=r"output 0 'y': dim 0 is 4 but the artifact was compiled for \[5\]"):
        artifact.run(state, _inputs(4))
    assert state.memory_stats()["live_allocations"] == 0
    assert artifact.run(state, _inputs(5))[0].shape == (5,)


def test_failing_program_reports_the_runtime_error(make_artifact: ArtifactFactory) -> None:
    with rt.State(memory_limit=700_000) as state:  # the input copy fits, the output does not
        artifact = rt.Artifact(make_artifact().directory)
        with pytest.raises(rt.OutOfMemoryError, match=r"program .* failed with status 2: hipdnn_ep_malloc: out of"):
            artifact.run(state, [np.zeros(100_000, np.float32), np.zeros(1, np.float32)])


def test_a_state_runs_one_program_at_a_time(make_artifact: ArtifactFactory, state: rt.State, tmp_path: Path) -> None:
    """A run on a state that is running a program is refused. The first run is held inside its program
    (it marks `entered`, then waits for `release`) while the second is tried, so the two overlap however
    the threads are scheduled; the wait's bound (60 s) only keeps a broken runtime from hanging the suite."""
    entered, release = tmp_path / "entered", tmp_path / "release"
    hold = (f'FILE* mark = fopen("{entered}", "w"); if (mark) fclose(mark);\n'
            f'  for (int i = 0; i < 60000 && access("{release}", F_OK) != 0; ++i) usleep(1000);')
    artifact = rt.Artifact(make_artifact(extra_call=hold).directory)
    outcomes: list[object] = []

    def run() -> None:
        try:
            outcomes.append(artifact.run(state, _inputs()))
        except Exception as err:  # reported by the assertion below
            outcomes.append(err)

    first = threading.Thread(target=run)
    first.start()
    try:
        deadline = time.monotonic() + 60
        while not entered.exists():
            assert first.is_alive() and time.monotonic() < deadline, f"the first run never entered: {outcomes}"
            time.sleep(0.001)
        with pytest.raises(rt.InvalidArgumentError, match="already running a program"):
            artifact.run(state, _inputs())
    finally:
        release.touch()
        first.join()
    x, w = _inputs()
    assert len(outcomes) == 1 and not isinstance(outcomes[0], Exception), outcomes
    np.testing.assert_array_equal(outcomes[0][0], 2 * x + w[0])  # the held run finished normally
    assert state.memory_stats()["live_allocations"] == 0


def test_a_program_says_why_it_refuses_its_inputs(make_artifact: ArtifactFactory, state: rt.State) -> None:
    """ABI 1.2: the text a program hands hipdnn_ep_set_error_message ({k} -> values[k]) is the run's message."""
    metadata = good_metadata()
    metadata["imports"].append(manifest_import("hipdnn_ep_set_error_message"))
    refuse = ('if (inputs[0].dims[0] == 3) { int64_t v[2] = {6, -9000000000LL}; hipdnn_ep_set_error_message(state, '
              '"node {{r}}: {0} vs {1}; {2} and {x} stay", v, 2); return HIPDNN_EP_STATUS_INVALID_ARGUMENT; }')
    artifact = rt.Artifact(make_artifact(metadata, extra_call=refuse).directory)
    with pytest.raises(rt.InvalidArgumentError,
                       match=r"program .*program\.so refused its inputs: node \{r\}: 6 vs -9000000000; "
                             r"\{2\} and \{x\} stay$"):
        artifact.run(state, [np.zeros(3, np.float32), np.zeros(1, np.float32)])
    x, w = _inputs()
    np.testing.assert_array_equal(artifact.run(state, [x, w])[0], 2 * x + w[0])  # the message went with its run


# Two unary kernel calls on the program's input: the first (RELU) succeeds, the second's op is unknown
# when the input has 3 elements.
TWO_KERNEL_CALLS = """static float scratch[64];
  hipdnn_ep_tensor_ref_t out_ref = {scratch, inputs[0].dims, 1, HIPDNN_EP_DTYPE_FLOAT32};
  int64_t op = HIPDNN_EP_UNARY_OP_RELU;
  hipdnn_ep_kernel_args_t a = {.struct_size = sizeof a, .inputs = inputs, .outputs = &out_ref, .int_attrs = &op,
                               .n_inputs = 1, .n_outputs = 1, .n_int_attrs = 1};
  int32_t s = hipdnn_ep_kernel_unary(state, &a);
  if (s) return s;
  if (inputs[0].dims[0] == 3) op = 999;
  s = hipdnn_ep_kernel_unary(state, &a);
  if (s) return s;"""


@pytest.mark.parametrize("nodes", [["node 'a' (Relu)", "node 'b' (Exp)"], None])
def test_a_failing_kernel_call_names_its_node(make_artifact: ArtifactFactory, state: rt.State, nodes) -> None:
    """The metadata's kernel_nodes (compiler 0.4) name the node of each kernel call; the run's error names the
    failing call's node (the second here, on every run); without the list the message is the kernel's alone."""
    metadata = good_metadata()
    metadata["imports"].append(manifest_import("hipdnn_ep_kernel_unary"))
    if nodes is not None:
        metadata["kernel_nodes"] = nodes
    artifact = rt.Artifact(make_artifact(metadata, extra_call=TWO_KERNEL_CALLS).directory)
    named = "node 'b' \\(Exp\\): " if nodes else ""
    for _ in range(2):
        message = rf"program\.so failed with status 1: {named}hipdnn_ep_kernel_unary: unknown unary op 999$"
        with pytest.raises(rt.InvalidArgumentError, match=message):
            artifact.run(state, [np.zeros(3, np.float32), np.zeros(1, np.float32)])
        x, w = _inputs()
        np.testing.assert_array_equal(artifact.run(state, [x, w])[0], 2 * x + w[0])


@pytest.mark.parametrize("fmt", [None, 0, 99, "1"])
def test_refuses_metadata_formats_it_does_not_read_before_loading(make_artifact: ArtifactFactory, fmt) -> None:
    """The runtime reads the metadata formats the manifest's [artifact] table declares, and refuses
    others (or none) by name, before trusting any other field or loading code."""
    declared = rt.abi_manifest()["artifact"]
    meta = good_metadata()
    if fmt is None:
        del meta["format"]
    else:
        meta["format"] = fmt
    built = make_artifact(meta)
    with pytest.raises(rt.AbiMismatchError) as err:
        rt.Artifact(built.directory)
    assert not built.loaded, "the artifact's code ran before its format was checked"
    reads = f"formats {declared['oldest_format']} to {declared['format']}"
    assert reads in str(err.value) and str(built.directory / declared["file"]) in str(err.value)
    assert ("states no format" if fmt in (None, "1") else f"metadata format {fmt} is") in str(err.value)


def test_format_names_come_from_the_manifest(make_artifact: ArtifactFactory, state: rt.State) -> None:
    declared = rt.abi_manifest()["artifact"]
    assert (declared["file"], declared["section"]) == ("program.so", ".hipdnn_ep_meta")
    for fmt in range(declared["oldest_format"], declared["format"] + 1):
        meta = good_metadata()
        meta["format"] = fmt
        (y,) = rt.Artifact(make_artifact(meta).directory).run(state, _inputs())
        assert y.shape == (4,)
