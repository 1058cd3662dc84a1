"""The compiler protocol (protocol.toml): bump rules against its released snapshot, generated copies, readers."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
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
from hipdnn_ep_abi.__main__ import CONTRACT_COPIES, CONTRACT_README, CONTRACT_SHARED_COPIES, main

CURRENT = contracts.PROTOCOL.read_text()
RELEASED = contracts.released_snapshots("protocol")
REPO = contracts.ROOT.parents[1]


def _check(text: str) -> list[str]:
    return contract_violations(RELEASED[-1], text)


def test_a_released_snapshot_exists_and_the_protocol_follows_it():
    assert RELEASED, "released/protocol/ holds no snapshot"
    assert contracts.check_released("protocol", contracts.load(contracts.PROTOCOL)) == []


def test_the_compiler_speaks_the_declared_protocol():
    module = import_schema(REPO / "packages/compiler/src/hipdnn_ep_compiler/abi", "protocol_schema")
    assert module.MAJOR == contracts.load(contracts.PROTOCOL).major
    protocol_py = (REPO / "packages/compiler/src/hipdnn_ep_compiler/protocol.py").read_text()
    assert "PROTOCOL = protocol_schema.MAJOR" in protocol_py
    assert "kCompilerProtocolVersion = protocol::kMajor" in (REPO / "packages/ep/src/compile_client.h").read_text()


@pytest.mark.parametrize("field", ["compile_request.model", "support_response.models[].nodes[].index",
                                   "capabilities_response.install_files", "error_response.error.message"])
def test_a_field_removed_without_a_major_bump_fails_naming_it(field):
    found = _check(without_field(CURRENT, field))
    assert any(f"compiler protocol field '{field}'" in v and "removed without a major bump" in v for v in found), found


@pytest.mark.parametrize(("field", "type_"), [("compile_request.output", "int"),
                                              ("support_response.models[].nodes[].supported", "string"),
                                              ("capabilities_response.abi.minors", "list<string>"),
                                              ("support_request.models", "string")])
def test_a_field_retyped_without_a_major_bump_fails_naming_it(field, type_):
    found = _check(retyped_field(CURRENT, field, type_))
    assert any(f"field '{field}'" in v and "retyped from" in v and type_ in v for v in found), found


def test_an_optional_field_made_required_fails():
    block = field_block("compile_request.manifest").search(CURRENT)[0]
    found = _check(CURRENT.replace(block, block.replace('type = "string"\n', 'type = "string"\nrequired = true\n')))
    assert any("field 'compile_request.manifest'" in v and "made required" in v for v in found), found


def test_a_new_protocol_may_change_anything():
    text = re.sub(r"(?m)^major = \d+$", "major = 4", without_field(CURRENT, "compile_request.manifest"), count=1)
    assert _check(text) == []


def test_an_optional_field_added_with_a_minor_bump_passes_and_without_one_fails():
    minor = contracts.load(RELEASED[-1]).minor + 1
    assert _check(added_field(set_minor(CURRENT, minor), "compile_request.notes", since=minor)) == []
    found = _check(added_field(CURRENT, "compile_request.notes", since=contracts.load(contracts.PROTOCOL).minor))
    assert any("field 'compile_request.notes'" in v and "frozen" in v for v in found), found
    found = _check(added_field(set_minor(CURRENT, minor), "compile_request.notes", since=minor, required=True))
    assert any("field 'compile_request.notes'" in v and "added as required" in v for v in found), found


def test_the_gate_command_fails_on_a_removed_or_retyped_field_and_names_it(tmp_path, monkeypatch, capsys):
    edited = tmp_path / "protocol.toml"
    edited.write_text(retyped_field(without_field(CURRENT, "compile_request.model"), "support_response.models",
                                    "list<string>"))
    monkeypatch.setattr(contracts, "PROTOCOL", edited)
    assert main(["contracts", "check-compat"]) == 1
    err = capsys.readouterr().err
    assert "compiler protocol field 'compile_request.model': removed without a major bump" in err, err
    assert "compiler protocol field 'support_response.models': retyped from list<object> to list<string>" in err, err


def test_the_gate_command_fails_without_a_released_snapshot(tmp_path, monkeypatch, capsys):
    (tmp_path / "metadata").mkdir()
    shutil.copy(contracts.released_snapshots("metadata")[-1], tmp_path / "metadata")
    monkeypatch.setattr(contracts, "RELEASED_DIR", tmp_path)
    import hipdnn_ep_abi.contracts as module
    original = module.check_released
    monkeypatch.setattr(module, "check_released", lambda kind, c, directory=tmp_path: original(kind, c, directory))
    monkeypatch.setattr(module, "released_snapshots",
                        lambda kind, directory=tmp_path, _f=module.released_snapshots: _f(kind, directory))
    assert main(["contracts", "check-compat"]) == 1
    assert "no released snapshot in released/protocol/" in capsys.readouterr().err


def _tree(tmp_path: Path) -> Path:
    """A copy of every file `contracts generate` writes, as the repository holds them."""
    for rel in [CONTRACT_README, *CONTRACT_SHARED_COPIES, *(r for copies in CONTRACT_COPIES.values() for r in copies)]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / rel, tmp_path / rel)
    return tmp_path


def test_the_generated_copies_are_current():
    assert main(["contracts", "generate", "--check"]) == 0


def test_a_hand_edited_generated_copy_fails_the_check(tmp_path, capsys):
    root = _tree(tmp_path)
    copy = root / "packages/compiler/src/hipdnn_ep_compiler/abi/protocol_schema.py"
    copy.write_text(copy.read_text().replace("MAJOR = 3", "MAJOR = 4"))
    assert main(["contracts", "generate", "--check", "--root", str(root)]) == 1
    assert "protocol_schema.py is stale: regenerate it" in capsys.readouterr().err
    assert main(["contracts", "generate", "--root", str(root)]) == 0
    assert main(["contracts", "generate", "--check", "--root", str(root)]) == 0


VALIDATOR = f"packages/compiler/src/hipdnn_ep_compiler/abi/{contracts.VALIDATOR_MODULE}.py"


def test_the_validator_is_generated_once_and_the_schema_modules_import_it():
    assert VALIDATOR in CONTRACT_SHARED_COPIES
    for copies in CONTRACT_COPIES.values():
        for rel in copies:
            text = (REPO / rel).read_text()
            assert f"from . import {contracts.VALIDATOR_MODULE}\n" in text, rel
            assert "def _walk" not in text and "def _is" not in text, f"{rel} holds a validator of its own"
    assert "def _walk" in (REPO / VALIDATOR).read_text()


@pytest.mark.parametrize("edit", ["hand-edited", "missing"])
def test_a_stale_validator_fails_the_check(tmp_path, capsys, edit):
    root = _tree(tmp_path)
    copy = root / VALIDATOR
    if edit == "missing":
        copy.unlink()
    else:
        copy.write_text(copy.read_text().replace('return True  # any', 'return False  # any'))
    assert main(["contracts", "generate", "--check", "--root", str(root)]) == 1
    err = capsys.readouterr().err
    assert f"{contracts.VALIDATOR_MODULE}.py is stale: regenerate it" in err, err
    assert "protocol_schema.py is stale" not in err and "metadata_schema.py is stale" not in err, err
    assert main(["contracts", "generate", "--root", str(root)]) == 0
    assert main(["contracts", "generate", "--check", "--root", str(root)]) == 0
    assert copy.read_text() == (REPO / VALIDATOR).read_text()


def test_a_schema_edited_without_regenerating_fails_the_check(tmp_path, monkeypatch, capsys):
    root = _tree(tmp_path / "repo")
    edited = tmp_path / "protocol.toml"
    edited.write_text(added_field(set_minor(CURRENT, 1), "compile_request.notes", since=1))
    monkeypatch.setattr(contracts, "PROTOCOL", edited)
    assert main(["contracts", "generate", "--check", "--root", str(root)]) == 1
    err = capsys.readouterr().err
    assert "protocol_schema.py is stale" in err and "README.md is stale" in err, err


def _validator(tmp_path: Path) -> dict:
    return vars(import_schema(write_schemas(tmp_path / "abi"), "protocol_schema"))


def _support_response() -> dict:
    return {"protocol": 3, "ok": True, "models": [{"nodes": [
        {"index": 0, "name": "a", "op_type": "Add", "domain": "", "supported": True},
        {"index": 1, "name": "b", "op_type": "Foo", "domain": "x", "supported": False, "reason": "unknown op"}]}]}


def test_the_generated_validator_names_each_broken_field(tmp_path):
    problems = _validator(tmp_path)["problems"]
    assert problems(_support_response(), message="support_response") == []
    broken = _support_response()
    broken["models"][0]["nodes"][1]["index"] = "1"
    del broken["models"][0]["nodes"][0]["supported"]
    broken["extra"] = 1
    assert problems(broken, message="support_response") == [
        "extra: not a declared field", "models[0].nodes[0].supported: missing (required)",
        "models[0].nodes[1].index: str where the schema says int"]
    assert problems({"protocol": 3, "action": "compile", "model": 5, "x": 1}, known_only=False,
                    message="compile_request") == ["model: int where the schema says string",
                                                   "output: missing (required)"]
    assert problems([1], message="compile_request") == ["the compile request is a list, not an object"]
    with pytest.raises(ValueError, match="no message 'run_request'"):
        problems({}, message="run_request")


PROGRAM = r"""
#include <iostream>
#include <iterator>
#include "hipdnn_ep/protocol_schema.h"
namespace p = hipdnn_ep::protocol;
int main(int, char** argv) {
  std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  std::string error;
  if (std::string(argv[1]) == "write") {
    p::CompileRequest r;
    r.protocol = p::kMajor;
    r.action = "compile";
    r.model = "m.onnx";
    r.output = "out";
    r.abi = "1.3";
    p::SupportRequest s;
    s.protocol = 3;
    s.action = "support";
    s.models = {"a.onnx", "b.onnx"};
    std::cout << p::ToJson(r).dump() << "\n" << p::ToJson(s).dump();
    return 0;
  }
  p::SupportResponse resp;
  if (!p::Read(nlohmann::json::parse(text), &resp, &error)) { std::cout << error; return 1; }
  for (const auto& m : resp.models)
    for (const auto& n : m.nodes) std::cout << n.index << ":" << n.supported << ":" << n.reason.value_or("-") << " ";
  return 0;
}
"""


@pytest.fixture(scope="module")
def cpp_program(tmp_path_factory):
    program = build_cpp_program(
        tmp_path_factory.mktemp("protocol"), contracts.CPP_PROTOCOL_HEADER,
        contracts.cpp_header(contracts.load(contracts.PROTOCOL), "protocol.toml", contracts.PROTOCOL_CPP), PROGRAM)

    def run(mode: str, text: str = "") -> tuple[int, str]:
        proc = subprocess.run([str(program), mode], input=text, capture_output=True, text=True)
        return proc.returncode, proc.stdout
    return run


def test_the_generated_cpp_writer_writes_what_the_validator_accepts(cpp_program, tmp_path):
    code, out = cpp_program("write")
    compile_request, support_request = (json.loads(line) for line in out.splitlines())
    assert compile_request == {"protocol": 3, "action": "compile", "model": "m.onnx", "output": "out", "abi": "1.3"}
    assert support_request == {"protocol": 3, "action": "support", "models": ["a.onnx", "b.onnx"]}
    problems = _validator(tmp_path)["problems"]
    assert problems(compile_request, message="compile_request") == []
    assert problems(support_request, message="support_request") == []


def test_the_generated_cpp_reader_reads_typed_fields(cpp_program):
    answer = _support_response()
    answer["from_a_newer_minor"] = [1]
    assert cpp_program("read", json.dumps(answer)) == (0, "0:1:- 1:0:unknown op ")


@pytest.mark.parametrize(("edit", "message"), [
    (lambda r: r.pop("models"), "field 'models': missing (required)"),
    (lambda r: r["models"][0]["nodes"][1].__setitem__("index", "1"),
     "field 'models[0].nodes[1].index': expected an integer"),
    (lambda r: r["models"][0]["nodes"][0].__setitem__("index", 2 ** 64),  # out of int64's range
     "field 'models[0].nodes[0].index': expected an integer"),
    (lambda r: r["models"][0].__setitem__("nodes", {}), "field 'models[0].nodes': expected a list"),
    (lambda r: r["models"].__setitem__(0, []), "field 'models[0]': expected an object"),
    (lambda r: r["models"][0]["nodes"][1].__setitem__("reason", None),
     "field 'models[0].nodes[1].reason': expected a string"),
])
def test_the_generated_cpp_reader_names_the_broken_field(cpp_program, edit, message):
    answer = _support_response()
    edit(answer)
    code, out = cpp_program("read", json.dumps(answer))
    assert code == 1 and out.startswith(message), out
