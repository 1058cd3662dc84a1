"""The artifact metadata schema (metadata.toml): bump rules against its released snapshot, generated copies."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import (
    added_field,
    build_cpp_program,
    contract_violations,
    field_block,
    import_schema,
    retyped_field,
    set_minor,
    without_field,
    write_schemas,
)
from hipdnn_ep_abi import contracts
from hipdnn_ep_abi.__main__ import main

CURRENT = contracts.METADATA.read_text()
RELEASED = contracts.released_snapshots("metadata")


def _check(text: str) -> list[str]:
    return contract_violations(RELEASED[-1], text)


def test_a_released_snapshot_exists_and_the_schema_follows_it():
    assert RELEASED, "released/metadata/ holds no snapshot"
    assert contracts.check_released("metadata", contracts.load()) == []


@pytest.mark.parametrize("field", ["kernel_nodes", "imports[].hash", "memory_plan.pool_bytes", "symbols"])
def test_a_field_removed_without_a_major_bump_fails_naming_it(field):
    found = _check(without_field(CURRENT, field) if field != "symbols" else
                   without_field(without_field(without_field(CURRENT, "symbols[].name"), "symbols[].value"), "symbols"))
    assert any(f"field '{field}'" in v and "removed without a major bump" in v for v in found), found


@pytest.mark.parametrize(("field", "type_"), [("inputs[].dims", "list<int>"), ("checks[].values", "list<string>"),
                                              ("graph_hash", "int"), ("kernel_nodes", "list<string?>")])
def test_a_field_retyped_without_a_major_bump_fails_naming_it(field, type_):
    found = _check(retyped_field(CURRENT, field, type_))
    assert any(f"field '{field}'" in v and "retyped from" in v and type_ in v for v in found), found


def test_an_optional_field_made_required_fails():
    block = field_block("kernel_nodes").search(CURRENT)[0]
    found = _check(CURRENT.replace(block, block.replace('type = "list<string>"\n',
                                                        'type = "list<string>"\nrequired = true\n')))
    assert any("field 'kernel_nodes'" in v and "made required" in v for v in found), found


def test_a_new_major_may_change_anything():
    text = re.sub(r"(?m)^major = \d+$", "major = 99", without_field(CURRENT, "kernel_nodes"), count=1)
    assert _check(text) == []


def test_an_optional_field_added_with_a_minor_bump_passes():
    minor = contracts.load(RELEASED[-1]).minor + 1
    assert _check(added_field(set_minor(CURRENT, minor), "notes", since=minor)) == []


def test_a_field_added_without_a_minor_bump_fails_naming_it():
    found = _check(added_field(CURRENT, "notes", since=contracts.load().minor))
    assert any("field 'notes'" in v and "frozen" in v for v in found), found


def test_a_required_field_added_fails_naming_it():
    minor = contracts.load(RELEASED[-1]).minor + 1
    found = _check(added_field(set_minor(CURRENT, minor), "notes", since=minor, required=True))
    assert any("field 'notes'" in v and "added as required" in v for v in found), found


def test_the_gate_command_fails_on_a_removed_field_and_names_it(tmp_path, monkeypatch, capsys):
    edited = tmp_path / "metadata.toml"
    edited.write_text(without_field(CURRENT, "kernel_nodes"))
    monkeypatch.setattr(contracts, "METADATA", edited)
    assert main(["contracts", "check-compat"]) == 1
    assert "artifact metadata field 'kernel_nodes': removed without a major bump" in capsys.readouterr().err


@pytest.mark.parametrize(("text", "message"), [
    ('[[fields]]\npath = "a"\ntype = "float"\n', "has type 'float'"),
    ('[[fields]]\npath = "a.b"\ntype = "int"\n', "before its parent 'a'"),
    ('[[fields]]\npath = "a"\ntype = "int"\n[[fields]]\npath = "a"\ntype = "int"\n', "declared twice"),
    ('[[fields]]\npath = "a"\ntype = "int"\nsince = 3\n', "after the schema's minor"),
])
def test_a_malformed_schema_is_refused(text, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        contracts.parse('[schema]\nname = "x"\nmajor = 1\nminor = 0\n' + text)


def test_the_generated_copies_are_current():
    assert main(["contracts", "generate", "--check"]) == 0


def _validator(tmp_path: Path):
    return import_schema(write_schemas(tmp_path / "abi"), "metadata_schema").problems


def _sample() -> dict:
    return {"format": 1, "compiler": {"name": "hipdnn-ep-compiler", "version": "0.4.1"}, "backend": "cpu",
            "abi": {"major": 1, "min_minor": 0}, "imports": [{"name": "f", "hash": "00", "since": 0}],
            "inputs": [{"name": "x", "dtype": 1, "dims": ["d0_0", 4], "dim_names": ["batch", None]}],
            "outputs": [{"name": "y", "dtype": 1, "dims": ["d0_0", 4]}],
            "weights": [{"name": "w", "dtype": 1, "dims": [4], "source": {"kind": "inline"}}],
            "memory_plan": {"pool_bytes": "(mul 16 d0_0)", "host_scratch_bytes": 0, "alignment": 256,
                            "buffers": [{"producer": "n", "offset": 0, "bytes": "(mul 16 d0_0)"}]},
            "checks": [], "kernel_nodes": ["n"], "graph_hash": "ab"}


def test_the_generated_validator_accepts_conforming_metadata(tmp_path):
    assert _validator(tmp_path)(_sample()) == []


def test_the_generated_validator_names_each_broken_field(tmp_path):
    problems = _validator(tmp_path)
    meta = _sample()
    del meta["graph_hash"]
    meta["inputs"][0]["dims"] = [1.5]
    meta["memory_plan"]["buffers"][0]["offset"] = None
    meta["compiler"]["extra"] = 1
    assert problems(meta) == ["compiler.extra: not a declared field",
                              "inputs[0].dims: list where the schema says list<size>",
                              "memory_plan.buffers[0].offset: NoneType where the schema says size",
                              "graph_hash: missing (required)"]
    # a reader accepts fields of a newer minor
    assert "compiler.extra: not a declared field" not in problems(meta, known_only=False)


READER = r"""
#include <iostream>
#include <iterator>
#include "hipdnn_ep/metadata_schema.h"
int main() {
  std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  hipdnn_ep::metadata::Metadata m;
  std::string error;
  if (!hipdnn_ep::metadata::Read(nlohmann::json::parse(text), &m, &error)) { std::cout << error; return 1; }
  std::cout << m.inputs.at(0).name << " " << m.inputs.at(0).dims.at(0).text << " " << m.inputs.at(0).dims.at(1).value
            << " " << m.memory_plan.pool_bytes.text << " " << (m.kernel_nodes ? m.kernel_nodes->size() : 99)
            << " " << (m.symbols ? "symbols" : "no-symbols") << " " << !m.inputs.at(0).dim_names->at(1).has_value();
}
"""


@pytest.fixture(scope="module")
def cpp_reader(tmp_path_factory):
    import subprocess

    reader = build_cpp_program(tmp_path_factory.mktemp("reader"), contracts.CPP_HEADER,
                               contracts.cpp_header(contracts.load()), READER)

    def run(meta: dict) -> tuple[int, str]:
        import json
        proc = subprocess.run([str(reader)], input=json.dumps(meta), capture_output=True, text=True)
        return proc.returncode, proc.stdout
    return run


def test_the_generated_cpp_reader_reads_typed_fields(cpp_reader):
    meta = _sample()
    meta["future_field"] = {"of": "a newer minor"}
    assert cpp_reader(meta) == (0, "x d0_0 4 (mul 16 d0_0) 1 no-symbols 1")


@pytest.mark.parametrize(("edit", "message"), [
    (lambda m: m.pop("graph_hash"), "field 'graph_hash': missing (required)"),
    (lambda m: m["inputs"][0]["dims"].__setitem__(1, 1.5), "field 'inputs[0].dims[1]': expected a size"),
    (lambda m: m["weights"][0]["source"].__setitem__("kind", 3), "field 'weights[0].source.kind': expected a string"),
    (lambda m: m.__setitem__("kernel_nodes", "n"), "field 'kernel_nodes': expected a list"),
])
def test_the_generated_cpp_reader_names_the_broken_field(cpp_reader, edit, message):
    meta = _sample()
    edit(meta)
    code, out = cpp_reader(meta)
    assert code == 1 and out.startswith(message), out
