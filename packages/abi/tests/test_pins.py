"""check-pins: every version constraint between the three wheels follows the manifest."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import set_minor
from hipdnn_ep_abi import DEFAULT_MANIFEST, parse, pins
from hipdnn_ep_abi.__main__ import check_version, main

ROOT = DEFAULT_MANIFEST.parents[2]
FILES = ["packages/runtime/pyproject.toml", "packages/compiler/pyproject.toml", "packages/ep/pyproject.toml",
         pins.COMPILER_JSON, pins.COMPILER_VERSION, pins.LOCK, pins.COMPILER_PROTOCOLS, pins.EP_PROTOCOL]


@pytest.fixture
def repo(tmp_path: Path) -> pins.Repo:
    """A copy of the files the pins live in."""
    for f in FILES:
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / f, tmp_path / f)
    return pins.Repo(tmp_path)


def test_committed_pins_follow_the_manifest(manifest, capsys):
    assert pins.check(manifest, pins.Repo(ROOT)) == []
    assert main(["check-pins"]) == 0
    want = pins.expected_pins(manifest, pins.Repo(ROOT))
    assert want["ep:runtime"] == f"hipdnn-ep-runtime>={manifest.major}.{manifest.minor},<{manifest.major + 1}"


def test_an_ep_built_for_a_newer_minor_keeps_no_stale_runtime_pin(repo, manifest_text):
    """The issue's case: ABI 1.2, but the EP still says >=1.1,<2 (pip would pair it with runtime 1.1)."""
    minor = parse(manifest_text).minor
    old, new = f"1.{minor}", f"1.{minor + 1}"
    m = parse(set_minor(manifest_text, minor + 1))
    found = {v.name: v.message for v in pins.check(m, repo)}
    assert f"hipdnn-ep-runtime>={old},<2, the ABI says hipdnn-ep-runtime>={new},<2" in found["hipdnn-ep"]
    assert f'version {old}.0 must be {new}.x' in found["hipdnn-ep-runtime"]
    assert set(found) >= {"hipdnn-ep", "hipdnn-ep-runtime"}
    pins.fix(m, repo)
    assert f'"hipdnn-ep-runtime>={new},<2"' in repo.pyproject("ep").read_text()


def test_a_changed_bundled_manifest_needs_a_new_compiler_version(repo, manifest):
    version = repo.version("compiler")
    major, minor, patch = (int(p) for p in version.split(".")[:3])
    path = repo.root / pins.COMPILER_JSON
    data = json.loads(path.read_text())
    data["functions"][0]["doc"] += " Changed."
    path.write_text(json.dumps(data))
    found = pins.check(manifest, repo)
    assert [v.name for v in found] == ["hipdnn-ep-compiler"]
    assert f"its bundled ABI manifest changed since version {version} recorded it" in found[0].message
    assert (f"Fix: bump packages/compiler/src/hipdnn_ep_compiler/_version.py (e.g. to {major}.{minor}.{patch + 1})"
            in found[0].message)
    pins.fix(manifest, repo)  # records nothing: the version is taken
    assert pins.check(manifest, repo) == found
    newer = f"{major}.{minor}.{patch + 1}"
    version_file = repo.root / pins.COMPILER_VERSION
    version_file.write_text(version_file.read_text().replace(f'"{version}"', f'"{newer}"'))
    pins.fix(manifest, repo)
    assert pins.check(manifest, repo) == []
    assert f'["{newer}"]' in (repo.root / pins.LOCK).read_text()
    # the EP still accepts every compiler of the ABI major that speaks its protocol, from the oldest one
    assert '"hipdnn-ep-compiler[runtime]>=0.4.1,<1"' in repo.pyproject("ep").read_text()


def test_hand_edited_pins_are_refused(repo, manifest):
    for package, old, new in (("ep", '"hipdnn-ep-compiler[runtime]>=0.4.1,<1"', '"hipdnn-ep-compiler>=0.1,<0.2"'),
                              ("compiler", '"hipdnn-ep-runtime>=1.0,<2"', '"hipdnn-ep-runtime>=1.0"')):
        path = repo.pyproject(package)
        assert old in path.read_text()
        path.write_text(path.read_text().replace(old, new))
    found = [str(v) for v in pins.check(manifest, repo)]
    assert any("hipdnn-ep: requires hipdnn-ep-compiler>=0.1,<0.2, the ABI says "
               "hipdnn-ep-compiler[runtime]>=0.4.1,<1" in v for v in found)
    assert any("extra 'runtime' requires hipdnn-ep-runtime>=1.0, the ABI says hipdnn-ep-runtime>=1.0,<2" in v
               for v in found)
    pins.fix(manifest, repo)
    assert pins.check(manifest, repo) == []


def test_check_version_needs_the_abi_minor(repo, manifest_text):
    assert check_version(parse(manifest_text), repo.pyproject("runtime")) == []
    minor = parse(manifest_text).minor + 1
    found = check_version(parse(set_minor(manifest_text, minor)), repo.pyproject("runtime"))
    assert len(found) == 1 and f"MAJOR.MINOR must equal the ABI 1.{minor}" in found[0].message


def test_the_ep_never_pins_a_compiler_that_does_not_answer_its_protocol(repo, manifest):
    """Compilers before 0.4.1 answer protocols 1 and 2 only; an EP that speaks 3 must not accept them (pip would
    pair them)."""
    assert pins.expected_pins(manifest, repo)["ep:compiler"] == "hipdnn-ep-compiler[runtime]>=0.4.1,<1"
    path = repo.pyproject("ep")
    path.write_text(path.read_text().replace('"hipdnn-ep-compiler[runtime]>=0.4.1,<1"',
                                             '"hipdnn-ep-compiler[runtime]>=0.1.0,<1"'))
    found = [str(v) for v in pins.check(manifest, repo)]
    assert any("requires hipdnn-ep-compiler[runtime]>=0.1.0,<1, the ABI says hipdnn-ep-compiler[runtime]>=0.4.1,<1"
               in v for v in found)
    # an EP that speaks a protocol no compiler answers yet is refused, naming both files
    header = repo.root / pins.EP_PROTOCOL
    header.write_text(header.read_text().replace("\nmajor = 3\n", "\nmajor = 4\n"))
    found = [str(v) for v in pins.check(manifest, repo)]
    assert any("speaks compiler protocol 4" in v and pins.COMPILER_PROTOCOLS in v for v in found)


def test_a_compiler_answering_new_protocols_needs_a_new_version(repo, manifest):
    source = repo.root / pins.COMPILER_PROTOCOLS
    source.write_text(source.read_text().replace("PROTOCOLS = (1, 2, 3)", "PROTOCOLS = (1, 2, 3, 4)"))
    found = [str(v) for v in pins.check(manifest, repo)]
    assert any("answers compiler protocols [1, 2, 3, 4]" in v and "Fix: bump" in v for v in found)
