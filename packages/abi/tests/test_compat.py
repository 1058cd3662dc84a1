"""The bump-rule gate: the manifest against the last released one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import declare_writes, edit_function, set_minor
from hipdnn_ep_abi import compat, parse
from hipdnn_ep_abi.__main__ import RELEASED_DIR, last_released, main
from hipdnn_ep_abi.model import ManifestError, load

NEW_FUNCTION = '''[[functions]]
name = "hipdnn_ep_trim_cache"
returns = "int32_t"
params = ["hipdnn_ep_state_t* state", "uint64_t keep_bytes"]
since = {since}
status = "active"
callers = ["host"]
doc = "Releases cached blocks until at most keep_bytes stay reserved."

'''


@pytest.fixture(scope="module")
def manifest_text() -> str:
    """ABI 1.1 as released: the rules are tried on a fixed manifest (its minor is 1, the next is 2), so the
    same edits keep testing the same rules as the committed manifest grows. It predates write bounds, so
    they are declared as that runtime wrote: init filled every field, memory_stats what struct_size covers."""
    return with_write_bounds((RELEASED_DIR / "1.1.toml").read_text())


def with_write_bounds(text: str, init: str = "all_fields") -> str:
    text = declare_writes(text, "hipdnn_ep_state_options_init", f'{{ options = "{init}" }}')
    return declare_writes(text, "hipdnn_ep_memory_stats", '{ out_stats = "caller_struct_size" }')


def violations(old_text: str, new_text: str) -> list[compat.Violation]:
    return compat.check(parse(old_text), parse(new_text))


def test_committed_manifest_obeys_the_bump_rules(manifest):
    assert compat.check(load(last_released()), manifest) == []


def test_identical_manifests_pass(manifest_text):
    assert violations(manifest_text, manifest_text) == []


def test_pool_base_losing_its_size_parameter_needs_a_major_bump(manifest_text):
    """The second historical break: get_pool_base(state, needed_size) became get_pool_base(state)."""
    broken = manifest_text.replace('params = ["hipdnn_ep_state_t* state", "uint64_t needed_size", "void** out_base"]',
                                   'params = ["hipdnn_ep_state_t* state", "void** out_base"]')
    assert broken != manifest_text
    found = violations(manifest_text, broken)
    assert [v.name for v in found] == ["hipdnn_ep_get_pool_base"]
    assert "signature changed" in found[0].message and "bump the ABI major" in found[0].message


def test_renaming_a_parameter_is_not_a_break(manifest_text):
    renamed = manifest_text.replace('"uint64_t needed_size"', '"uint64_t size_in_bytes"')
    assert renamed != manifest_text
    assert violations(manifest_text, renamed) == []


def test_deleting_host_scratch_base_needs_a_major_bump(manifest_text):
    """The first historical break: a function the compiler emits for dynamic shapes was deleted."""
    broken = edit_function(manifest_text, "hipdnn_ep_get_host_scratch_base", None)
    found = violations(manifest_text, broken)
    assert [v.name for v in found] == ["hipdnn_ep_get_host_scratch_base"]
    assert "removed" in found[0].message


def test_breaks_are_allowed_with_a_major_bump(manifest_text):
    broken = edit_function(manifest_text, "hipdnn_ep_get_host_scratch_base", None)
    broken = re.sub(r"(?m)^major = 1$", "major = 2", broken)
    assert violations(manifest_text, broken) == []


def test_adding_a_function_needs_a_minor_bump(manifest_text):
    added = manifest_text.replace("# ---------------------------------------------------------------- kernels",
                                  NEW_FUNCTION.format(since=1) + "# -- kernels", 1)
    found = violations(manifest_text, added)
    assert [v.name for v in found] == ["hipdnn_ep_trim_cache"]
    assert "without a minor bump" in found[0].message


def test_adding_a_function_with_a_minor_bump_passes(manifest_text):
    added = manifest_text.replace("# ---------------------------------------------------------------- kernels",
                                  NEW_FUNCTION.format(since=2) + "# -- kernels", 1)
    assert violations(manifest_text, set_minor(added, 2)) == []


def test_added_function_must_say_the_new_minor(manifest_text):
    added = manifest_text.replace("# ---------------------------------------------------------------- kernels",
                                  NEW_FUNCTION.format(since=1) + "# -- kernels", 1)
    found = violations(manifest_text, set_minor(added, 2))
    assert [v.name for v in found] == ["hipdnn_ep_trim_cache"] and "set since = 2" in found[0].message


def test_appending_to_a_struct_size_led_struct_is_a_minor_change(manifest_text):
    grown = manifest_text.replace('  ["uint64_t pool_bytes", 0],\n',
                                  '  ["uint64_t pool_bytes", 0],\n  ["uint64_t retired_bytes", 2],\n')
    assert grown != manifest_text
    assert [v.name for v in violations(manifest_text, grown)] == ["hipdnn_ep_memory_stats_t"]
    assert violations(manifest_text, set_minor(grown, 2)) == []


def test_appending_does_not_change_existing_signature_hashes(manifest_text):
    grown = set_minor(manifest_text.replace('  ["uint64_t pool_bytes", 0],\n',
                                            '  ["uint64_t pool_bytes", 0],\n  ["uint64_t retired_bytes", 2],\n'), 2)
    old, new = parse(manifest_text), parse(grown)
    fn = "hipdnn_ep_memory_stats"
    assert old.signature_hash(old.function(fn)) == new.signature_hash(new.function(fn))


def test_retyping_a_struct_field_breaks_every_function_taking_it(manifest_text):
    broken = manifest_text.replace('["int32_t rank", 1]', '["int64_t rank", 1]')
    names = {v.name for v in violations(manifest_text, broken)}
    assert {"hipdnn_ep_tensor_ref_t", "hipdnn_ep_artifact_run", "hipdnn_ep_program_run"} <= names


def test_appending_to_a_frozen_struct_needs_a_major_bump(manifest_text):
    grown = set_minor(manifest_text.replace('  ["int32_t dtype", 1],\n',
                                            '  ["int32_t dtype", 1],\n  ["int64_t offset", 2],\n'), 2)
    found = violations(manifest_text, grown)
    assert any(v.name == "hipdnn_ep_tensor_ref_t" and "without struct_size" in v.message for v in found)


def test_renumbering_an_enum_value_needs_a_major_bump(manifest_text):
    broken = manifest_text.replace('["OUT_OF_MEMORY", 2]', '["OUT_OF_MEMORY", 20]')
    assert [v.name for v in violations(manifest_text, broken)] == ["hipdnn_ep_status"]


def test_reordering_kernel_attributes_needs_a_major_bump(manifest_text):
    broken = manifest_text.replace('int_attrs = ["trans_a", "trans_b"]', 'int_attrs = ["trans_b", "trans_a"]')
    assert [v.name for v in violations(manifest_text, broken)] == ["hipdnn_ep_kernel_gemm"]


GEMM_ATTRS = 'int_attrs = ["trans_a", "trans_b"]'


def test_appending_a_kernel_attribute_needs_its_since(manifest_text):
    """A compiler of 1.1 reads a newer runtime's manifest and passes every attribute int_attrs lists: one
    appended without a since would be passed by compilers that cannot know its value (cast's saturate,
    appended in 1.3, crashed compilers 0.2 and 0.3 that way)."""
    grown = set_minor(manifest_text.replace(GEMM_ATTRS, 'int_attrs = ["trans_a", "trans_b", "packed"]'), 2)
    found = violations(manifest_text, grown)
    assert [v.name for v in found] == ["hipdnn_ep_kernel_gemm"]
    assert "int attribute packed was appended after 1.1 without a since" in found[0].message
    assert 'Write it as ["packed", 2]' in found[0].message
    dated = set_minor(manifest_text.replace(GEMM_ATTRS, 'int_attrs = ["trans_a", "trans_b", ["packed", 2]]'), 2)
    assert violations(manifest_text, dated) == []


def test_an_appended_attribute_since_cannot_change(manifest_text):
    old = set_minor(manifest_text.replace(GEMM_ATTRS, 'int_attrs = ["trans_a", "trans_b", ["packed", 2]]'), 2)
    new = set_minor(old.replace('["packed", 2]', '["packed", 3]'), 3)
    found = violations(old, new)
    assert [v.name for v in found] == ["hipdnn_ep_kernel_gemm"]
    assert "int attribute packed: since changed from 2 to 3" in found[0].message


@pytest.mark.parametrize("attrs, error", [
    ('["trans_a", ["packed", 2], "trans_b"]', "follows an attribute appended later"),
    ('["trans_a", "trans_b", ["packed", 1]]', "outside 2 (after the kernel's) to 2"),
    ('["trans_a", "trans_b", ["packed", 3]]', "outside 2 (after the kernel's) to 2"),
    ('["trans_a", "trans_b", ["packed"]]', "must be a name or [name, since]"),
    ('["trans_a", "trans_b", "trans_a"]', "listed twice"),
])
def test_a_malformed_appended_attribute_is_a_manifest_error(manifest_text, attrs, error):
    with pytest.raises(ManifestError, match=re.escape(error)):
        parse(set_minor(manifest_text.replace(GEMM_ATTRS, f"int_attrs = {attrs}"), 2))


@pytest.mark.parametrize("snapshot", sorted(RELEASED_DIR.glob("*.toml")), ids=lambda p: p.stem)
def test_released_readers_see_the_attributes_they_knew(manifest, snapshot):
    """What a compiler released with a snapshot's ABI passes, reading the committed manifest's JSON: every
    name of a kernel's int_attrs / float_attrs. Those lists must be the ones that snapshot had."""
    from hipdnn_ep_abi.generate import manifest_json

    head = {f["name"]: f for f in manifest_json(manifest)["functions"] if f["kind"] == "kernel"}
    for f in manifest_json(load(snapshot))["functions"]:
        if f["kind"] == "kernel" and f["name"] in head:
            for key in ("int_attrs", "float_attrs"):
                assert head[f["name"]][key] == f[key], (f["name"], key)


def test_version_cannot_go_backwards(manifest):
    found = compat.check(manifest, load(RELEASED_DIR / "1.0.toml"))
    assert len(found) == 1 and "backwards" in found[0].message


def test_cli_names_the_function_and_fails(tmp_path, manifest_text, capsys):
    broken = tmp_path / "manifest.toml"
    broken.write_text(edit_function(manifest_text, "hipdnn_ep_get_host_scratch_base", None))
    assert main(["--manifest", str(broken), "check-compat"]) == 1
    assert "hipdnn_ep_get_host_scratch_base: removed" in capsys.readouterr().err
    assert main(["check-compat"]) == 0


def test_released_minor_is_frozen(tmp_path, manifest, manifest_text, capsys):
    """Breaks made without a version change are caught against the snapshot of the current minor:
    the minor this manifest declares has been released, so what it exports is frozen (or, while the
    committed manifest's minor is not released yet, it is the one before it)."""
    assert last_released().stem in (f"{manifest.major}.{manifest.minor}", f"{manifest.major}.{manifest.minor - 1}")
    broken = edit_function(manifest_text, "hipdnn_ep_artifact_metadata", None)
    matmul = 'doc = "Batched matrix product with broadcast batch dims (ONNX MatMul, ranks >= 1)."\n'
    assert matmul + 'dtypes.default = ["FLOAT32", "FLOAT16"]' in broken
    broken = broken.replace(matmul + 'dtypes.default = ["FLOAT32", "FLOAT16"]', matmul + 'dtypes.default = ["FLOAT32"]')
    fields = '  ["int32_t rank", 1],\n  ["int32_t dtype", 1],\n'
    assert fields in broken
    broken = broken.replace(fields, '  ["int32_t dtype", 1],\n  ["int32_t rank", 1],\n')
    path = tmp_path / "manifest.toml"
    path.write_text(broken)
    assert main(["--manifest", str(path), "check-compat"]) == 1
    err = capsys.readouterr().err
    assert "hipdnn_ep_artifact_metadata: removed" in err
    assert "hipdnn_ep_kernel_matmul: input 0 no longer accepts FLOAT16" in err
    assert "hipdnn_ep_tensor_ref_t: field 'int32_t rank' changed to 'int32_t dtype'" in err


def test_every_released_snapshot_of_the_major_is_checked(capsys):
    assert main(["check-compat"]) == 0
    out = capsys.readouterr().out
    assert "(1.0.toml)" in out and "(1.1.toml)" in out


# -- accepted element types: they only grow within a major

POW = 'dtypes.POW = ["FLOAT32", "FLOAT16"]'


def test_dropping_a_dtype_from_an_op_needs_a_major_bump(manifest_text):
    narrowed = manifest_text.replace(POW, 'dtypes.POW = ["FLOAT32"]')
    assert narrowed != manifest_text
    found = violations(manifest_text, narrowed)
    assert [v.name for v in found] == ["hipdnn_ep_kernel_binary"]
    assert "op POW" in found[0].message and "no longer accepts FLOAT16" in found[0].message
    assert "bump the ABI major" in found[0].message
    assert violations(manifest_text, re.sub(r"(?m)^major = 1$", "major = 2", narrowed)) == []


def test_narrowing_the_default_names_every_op_it_covers(manifest_text):
    narrowed = manifest_text.replace('dtypes.default = ["FLOAT32", "FLOAT16", "INT32", "INT64"]\ndtypes.POW',
                                     'dtypes.default = ["FLOAT32", "FLOAT16", "INT32"]\ndtypes.POW')
    assert narrowed != manifest_text
    found = violations(manifest_text, narrowed)
    assert {v.name for v in found} == {"hipdnn_ep_kernel_binary"}
    # EQUAL and POW have lists of their own; every other op lost INT64.
    assert sorted(re.search(r"op (\w+)", v.message)[1] for v in found) == \
        sorted(["ADD", "SUB", "MUL", "DIV", "LESS", "GREATER"])
    assert all("no longer accepts INT64" in v.message for v in found)


def test_adding_a_dtype_needs_a_minor_bump(manifest_text):
    grown = manifest_text.replace(POW, 'dtypes.POW = ["FLOAT32", "FLOAT16", "FLOAT64"]')
    found = violations(manifest_text, grown)
    assert [v.name for v in found] == ["hipdnn_ep_kernel_binary"]
    assert "op POW, input 0 accepts FLOAT64" in found[0].message and "bump the ABI minor" in found[0].message
    # With the bump the type must say when it was added, or artifacts using it claim a 1.1 runtime.
    found = violations(manifest_text, set_minor(grown, 2))
    assert [v.name for v in found] == ["hipdnn_ep_kernel_binary"]
    assert "accepts FLOAT64 since 1.1, but 1.1 was released without it" in found[0].message
    assert 'Write it as ["FLOAT64", 2]' in found[0].message
    dated = manifest_text.replace(POW, 'dtypes.POW = ["FLOAT32", "FLOAT16", ["FLOAT64", 2]]')
    assert violations(manifest_text, set_minor(dated, 2)) == []


def test_a_dtype_since_cannot_change(manifest_text):
    old = set_minor(manifest_text.replace(POW, 'dtypes.POW = ["FLOAT32", "FLOAT16", ["FLOAT64", 2]]'), 2)
    new = old.replace('["FLOAT64", 2]', '["FLOAT64", 1]')
    found = violations(old, new)
    assert [v.name for v in found] == ["hipdnn_ep_kernel_binary"]
    assert "the since of FLOAT64 changed from 2 to 1" in found[0].message


def test_an_enum_value_added_needs_its_since(manifest_text):
    reduce_values = 'values = [["SUM", 0], ["MEAN", 1], ["MAX", 2]]'
    assert reduce_values in manifest_text
    grown = manifest_text.replace(reduce_values, 'values = [["SUM", 0], ["MEAN", 1], ["MAX", 2], ["MIN", 3]]')
    grown = set_minor(grown, 2)
    found = violations(manifest_text, grown)
    assert [v.name for v in found] == ["hipdnn_ep_reduce_op"]
    assert 'value MIN added with since = 1' in found[0].message and '["MIN", 3, 2]' in found[0].message
    dated = grown.replace('["MIN", 3]', '["MIN", 3, 2]')
    assert violations(manifest_text, dated) == []
    assert parse(dated).enum("hipdnn_ep_reduce_op").since_of("MIN") == 2
    assert parse(dated).enum("hipdnn_ep_reduce_op").since_of("MAX") == 1


def test_a_table_on_a_kernel_that_had_none_is_a_narrowing(manifest_text):
    """No table means every dtype: declaring one for concat takes types away."""
    concat = 'name = "hipdnn_ep_kernel_concat"\nsince = 1\nint_attrs = ["axis"]\n'
    narrowed = manifest_text.replace(concat, concat + 'dtypes.default = ["FLOAT32"]\n')
    assert narrowed != manifest_text
    found = violations(manifest_text, narrowed)
    assert {v.name for v in found} == {"hipdnn_ep_kernel_concat"}
    assert any("input 0 no longer accepts INT64" in v.message for v in found)


def test_narrowing_a_later_input_needs_a_major_bump(manifest_text):
    narrowed = manifest_text.replace('input_dtypes.1 = ["INT32", "INT64"]', 'input_dtypes.1 = ["INT64"]')
    assert narrowed != manifest_text
    found = violations(manifest_text, narrowed)
    assert [v.name for v in found] == ["hipdnn_ep_kernel_gather"]
    assert "input 1 no longer accepts INT32" in found[0].message


def test_cli_names_the_kernel_op_and_dtype(tmp_path, manifest_text, capsys):
    released = tmp_path / "1.1.toml"
    released.write_text(manifest_text)
    broken = tmp_path / "manifest.toml"
    broken.write_text(manifest_text.replace('dtypes.MEAN = ["FLOAT32", "FLOAT16"]', 'dtypes.MEAN = ["FLOAT32"]'))
    assert main(["--manifest", str(broken), "check-compat", "--released", str(released)]) == 1
    assert "hipdnn_ep_kernel_reduce: op MEAN, input 0 no longer accepts FLOAT16" in capsys.readouterr().err


CALLBACK_PARAMS = ('params = ["void* context", "int32_t index", "const hipdnn_ep_tensor_ref_t* output", '
                   '"uint64_t size", "void** out_data"]')


def test_a_callback_type_is_frozen_within_a_major():
    """The host implements a callback for every minor of the major: changing its type breaks, and it
    changes the hash of each function that takes a struct holding it."""
    released = (Path(__file__).resolve().parents[1] / "manifest.toml").read_text()
    assert CALLBACK_PARAMS in released
    changed = released.replace(CALLBACK_PARAMS, CALLBACK_PARAMS.replace('"int32_t index"', '"int64_t index"'))
    found = [str(v) for v in violations(released, changed)]
    assert any(v.startswith("hipdnn_ep_output_alloc_fn: callback type changed from 'int32_t "
                            "hipdnn_ep_output_alloc_fn(void*, int32_t, ") for v in found), found
    assert any(v.startswith("hipdnn_ep_artifact_run_into: the layout of a struct it takes changed") for v in found)


# -- writes through a struct that grows: each declares its bound, and the bound stays inside the
#    struct the function's oldest caller passes

OPTIONS_FIELDS = '  ["uint64_t alignment", 0],\n]'
GRAPH_FIELDS = '  ["uint64_t alignment", 0],\n  ["int32_t graph_capture", 3],\n  ["int32_t graph_cache_size", 3],\n]'


def grown_options(init: str) -> tuple[str, str]:
    """The 9394de5 situation: released 1.2, and a 1.3 candidate whose state options gained two fields
    while hipdnn_ep_state_options_init (since 1.0) writes with the bound `init`."""
    released = (RELEASED_DIR / "1.2.toml").read_text()
    assert OPTIONS_FIELDS in released
    candidate = set_minor(with_write_bounds(released, init).replace(OPTIONS_FIELDS, GRAPH_FIELDS), 3)
    return released, candidate


def test_a_struct_growing_under_a_writer_of_every_field_is_refused():
    """ABI 1.3 appended graph_capture and graph_cache_size to the state options while init, since 1.0,
    kept writing every field: 8 bytes past the 32-byte struct of a 1.0-1.2 caller (a crash in 12 matrix
    cells). The appended fields alone obey the rules; the writer's bound does not."""
    released, candidate = grown_options("all_fields")
    found = violations(released, candidate)
    assert [v.name for v in found] == ["hipdnn_ep_state_options_init"], found
    msg = found[0].message
    assert "graph_capture, graph_cache_size (added in 1.3)" in msg
    assert "a caller built for 1.0 (the function's since) passes 32 bytes and would have 40 written" in msg
    assert 'writes = { options = "caller_struct_size" }' in msg and 'writes = { options = "fields_of_1.0" }' in msg


def test_a_bound_newer_than_the_function_is_refused():
    released, candidate = grown_options("fields_of_1.3")
    found = violations(released, candidate)
    assert [v.name for v in found] == ["hipdnn_ep_state_options_init"]
    assert "the bound \"fields_of_1.3\"" in found[0].message


@pytest.mark.parametrize("init", ["fields_of_1.0", "caller_struct_size"])
def test_a_struct_growing_under_a_bounded_writer_passes(init):
    """eacb2e6's fix: init writes the fields of 1.0 (or would read the caller's struct_size)."""
    released, candidate = grown_options(init)
    assert violations(released, candidate) == []


def test_an_undeclared_write_bound_is_refused():
    """A function writing through a struct that grows must say how far it writes, before it can
    grow: here hipdnn_ep_memory_stats declares nothing."""
    released = (RELEASED_DIR / "1.2.toml").read_text()
    candidate = declare_writes(released, "hipdnn_ep_state_options_init", '{ options = "fields_of_1.0" }')
    found = violations(released, candidate)
    assert [v.name for v in found] == ["hipdnn_ep_memory_stats"]
    assert "declares no write bound" in found[0].message
    assert 'declare writes = { out_stats = "caller_struct_size" }' in found[0].message
    # A released snapshot predates the key: as the old side it is read without bounds and is not judged.
    assert all(fn.writes == () for fn in parse(released).functions)


def test_the_cli_refuses_the_replayed_crash(tmp_path, capsys):
    released, candidate = grown_options("all_fields")
    (tmp_path / "1.2.toml").write_text(released)
    (tmp_path / "manifest.toml").write_text(candidate)
    assert main(["--manifest", str(tmp_path / "manifest.toml"), "check-compat",
                 "--released", str(tmp_path / "1.2.toml")]) == 1
    assert "hipdnn_ep_state_options_init: writes hipdnn_ep_state_options_t through" in capsys.readouterr().err


def test_the_committed_writers_declare_their_bounds(manifest):
    assert compat.write_bound_violations(manifest) == []
    assert {fn.name: dict(fn.writes) for fn in manifest.functions if fn.writes} == {
        "hipdnn_ep_state_options_init": {"options": "fields_of_1.0"},
        "hipdnn_ep_memory_stats": {"out_stats": "caller_struct_size"},
        "hipdnn_ep_graph_stats": {"out_stats": "caller_struct_size"},
        "hipdnn_ep_device_memory_stats": {"out_stats": "caller_struct_size"},
    }


@pytest.mark.parametrize(("writes", "error"), [
    ('{ state = "caller_struct_size" }', "writes.state must name a parameter that is a non-const pointer"),
    ('{ out_stats = "sizeof" }', "the bound must be"),
    ('{ out_stats = "fields_of_1.9" }', "names an ABI other than 1.0 to 1.1"),
])
def test_a_malformed_write_bound_is_a_manifest_error(manifest_text, writes, error):
    text = edit_function(manifest_text, "hipdnn_ep_memory_stats", None)
    text = text.replace("# ---------------------------------------------------------------- kernels",
                        '[[functions]]\nname = "hipdnn_ep_memory_stats"\nreturns = "int32_t"\n'
                        'params = ["hipdnn_ep_state_t* state", "hipdnn_ep_memory_stats_t* out_stats"]\n'
                        f'since = 0\ncallers = ["host"]\nwrites = {writes}\n\n# -- kernels', 1)
    with pytest.raises(ManifestError, match=re.escape(error)):
        parse(text)
