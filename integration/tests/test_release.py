"""tools/release/release.py: the bump rules, the ABI snapshot, the changelog and the tag, on a copy of the
files a release reads and writes, in a git repository of its own."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import release

ROOT = Path(__file__).resolve().parents[2]
FILES = ["packages/runtime/pyproject.toml", "packages/compiler/pyproject.toml", "packages/ep/pyproject.toml",
         "packages/runtime/CHANGELOG.md", "packages/compiler/CHANGELOG.md", "packages/ep/CHANGELOG.md",
         "packages/compiler/abi-lock.toml", "packages/compiler/src/hipdnn_ep_compiler/_version.py",
         "packages/compiler/src/hipdnn_ep_compiler/abi/runtime_abi_v1.json",
         # the compiler protocol versions check-pins reads, from where check-pins reads them
         release._abi(ROOT)[3].COMPILER_PROTOCOLS, release._abi(ROOT)[3].EP_PROTOCOL]

NEW_FUNCTION = '''
[[functions]]
name = "hipdnn_ep_trim_cache"
returns = "int32_t"
params = ["hipdnn_ep_state_t* state", "uint64_t keep_bytes"]
since = {minor}
status = "active"
callers = ["host"]
doc = "Releases cached blocks until at most keep_bytes stay reserved."
'''


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> release.Repo:
    if shutil.which("git") is None:
        pytest.skip("needs git")
    root = tmp_path / "repo"
    shutil.copytree(ROOT / "packages/abi", root / "packages/abi",
                    ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    for f in FILES:
        (root / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / f, root / f)
    # the fixture starts before a release of the checkout's versions, whether or not they are released
    for package in release.PACKAGES:
        version = release.Repo(root).version(package)
        log = root / "packages" / package / "CHANGELOG.md"
        log.write_text(re.sub(rf"(?m)^## {re.escape(version)} \(.*\)$", f"## {version} (unreleased)", log.read_text(),
                              count=1))
    _git(root, "init", "-q")
    _git(root, "config", "user.email", "release@test")
    _git(root, "config", "user.name", "release test")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "start")
    return release.Repo(root)


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def test_the_checkout_is_releasable():
    assert release.main(["check"]) == 0


def test_cut_dates_the_changelog_snapshots_and_tags(repo: release.Repo):
    version = repo.version("runtime")
    assert release.cut(repo, "runtime", "2026-12-03") == f"runtime-v{version}"
    assert f"## {version} (2026-12-03)" in repo.changelog("runtime").read_text()
    assert _git(repo.root, "log", "-1", "--format=%s") == f"Release runtime {version}"
    assert repo.tags("runtime") == [version]
    assert _git(repo.root, "status", "--porcelain") == ""
    # the same version again: refused, with the fix
    with pytest.raises(SystemExit, match=rf"runtime {version} is already released \(runtime-v{version}, commit "
                                         r"[0-9a-f]{12}\)\. Fix: bump its version"):
        release.cut(repo, "runtime", "2026-12-04")
    # the CI gate: a released version has nothing to release, which is not a failure
    assert release.check(repo, "runtime", to_cut=False) == []
    assert release.main(["--root", str(repo.root), "check", "runtime"]) == 0


def test_check_says_when_a_released_package_changed_since(repo: release.Repo, capsys: pytest.CaptureFixture[str]):
    version = repo.version("runtime")
    release.cut(repo, "runtime", "2026-12-03")
    assert release.main(["--root", str(repo.root), "check", "runtime"]) == 0
    assert capsys.readouterr().out == f"runtime {version}: released (runtime-v{version}, commit " \
        f"{_git(repo.root, 'rev-parse', 'HEAD')[:12]})\n"
    log = repo.changelog("runtime")
    dated = f"## {version} (2026-12-03)"
    log.write_text(log.read_text().replace(dated, f"## Unreleased\n\n- x\n\n{dated}"))
    _git(repo.root, "commit", "-q", "-am", "a change after the release")
    assert release.main(["--root", str(repo.root), "check", "runtime"]) == 0
    assert "; 1 commit(s) since changed packages/runtime: the next release needs a new version" in \
        capsys.readouterr().out


def test_a_release_is_found_without_its_tag(repo: release.Repo, capsys: pytest.CaptureFixture[str]):
    """Tags may not travel with the history: the release commit's subject alone identifies a release."""
    compiler = repo.version("compiler")
    tagged = _git(repo.root, "rev-parse", "HEAD")
    assert release.cut(repo, "ep", "2026-12-03") == f"ep-v{repo.version('ep')}"
    ep_commit = _git(repo.root, "rev-parse", "HEAD")
    commit = release.cut(repo, "compiler", "2026-12-03", tag=False)
    assert _git(repo.root, "tag", "--list", "compiler-v*") == ""
    _git(repo.root, "tag", "-d", f"ep-v{repo.version('ep')}")
    # look-alike subjects are not releases
    _git(repo.root, "commit", "-q", "--allow-empty", "-m", f"Release compiler {compiler} notes")
    _git(repo.root, "commit", "-q", "--allow-empty", "-m", "Release runtime soon")
    assert repo.releases("compiler") == [release.Release("compiler", compiler, commit, "log")]
    assert repo.releases("ep") == [release.Release("ep", repo.version("ep"), ep_commit, "log")]
    assert repo.releases("runtime") == []
    with pytest.raises(SystemExit, match=rf"compiler {compiler} is already released"):
        release.cut(repo, "compiler", "2026-12-04")
    # a tag, where present, names the release even when its commit's subject does not
    _git(repo.root, "tag", "runtime-v1.0.0", tagged)
    assert repo.releases("runtime") == [release.Release("runtime", "1.0.0", tagged, "tag")]
    assert release.main(["--root", str(repo.root), "list", "compiler"]) == 0
    assert capsys.readouterr().out == f"compiler {compiler} {commit} (by log)\n"


def test_a_new_abi_minor_needs_the_runtime_minor_and_gets_its_snapshot(repo: release.Repo):
    """Runtime 1.(N+1): a function added in ABI 1.(N+1) is released with its own snapshot."""
    manifest = repo.root / "packages/abi/manifest.toml"
    cli, _, load, pins = release._abi(repo.root)
    major, minor = load(manifest).major, load(manifest).minor
    old, new = f"{major}.{minor}", f"{major}.{minor + 1}"
    _edit(manifest, f"minor = {minor}\n", f"minor = {minor + 1}\n")
    manifest.write_text(manifest.read_text() + NEW_FUNCTION.format(minor=minor + 1))
    _git(repo.root, "commit", "-q", "-am", f"ABI {new}")
    problems = release.check(repo, "runtime")
    assert any(f"version {old}.0 must be {new}.x" in p for p in problems)
    # the compiler's copy of the manifest must follow, with a new compiler version (check-pins)
    assert any(f"hipdnn-ep-runtime>={old},<{major + 1}, the ABI says hipdnn-ep-runtime>={new},<{major + 1}" in p
               for p in problems)

    _edit(repo.root / "packages/runtime/pyproject.toml", f'version = "{old}.0"', f'version = "{new}.0"')
    _edit(repo.changelog("runtime"), f"## {old}.0 (unreleased)", f"## {new}.0 (unreleased)\n\n- hipdnn_ep_trim_cache."
                                                                f"\n\n## {old}.0 (2026-12-01)")
    # what a developer runs: the compiler's copy of the JSON, a new compiler version, the pins
    m = load(manifest)
    (repo.root / pins.COMPILER_JSON).write_text(cli.generate.manifest_json_text(m))
    _edit(repo.root / pins.COMPILER_VERSION, f'"{repo.version("compiler")}"', '"0.99.0"')
    pins.fix(m, pins.Repo(repo.root))
    _git(repo.root, "commit", "-q", "-am", f"runtime {new}.0")
    assert release.check(repo, "runtime") == []
    assert release.cut(repo, "runtime", "2026-12-03") == f"runtime-v{new}.0"
    snapshot = repo.root / f"packages/abi/released/{new}.toml"
    assert snapshot.read_text() == manifest.read_text()
    assert sorted(_git(repo.root, "show", "--name-only", "--format=", "HEAD").splitlines()) == \
        [f"packages/abi/released/{new}.toml", "packages/runtime/CHANGELOG.md"]


def test_a_break_without_a_major_bump_is_not_released(repo: release.Repo):
    manifest = repo.root / "packages/abi/manifest.toml"
    text = manifest.read_text()
    manifest.write_text(re.sub(r'(?ms)^\[\[functions\]\]\nname = "hipdnn_ep_get_host_scratch_base"\n.*?(?=^\[\[)',
                               "", text, count=1))
    _git(repo.root, "commit", "-q", "-am", "drop a function")
    with pytest.raises(SystemExit, match=r"hipdnn_ep_get_host_scratch_base: removed.*\(against 1\.1\.toml\)"):
        release.cut(repo, "runtime", "2026-12-03")
    assert repo.tags("runtime") == []


def test_changelog_and_clean_tree_are_required(repo: release.Repo):
    _edit(repo.changelog("ep"), f"## {repo.version('ep')} (unreleased)", "## Next")
    _git(repo.root, "commit", "-q", "-am", "no section")
    with pytest.raises(SystemExit, match=r"packages/ep/CHANGELOG.md has no '## .* \(unreleased\)' section"):
        release.cut(repo, "ep", "2026-12-03")
    (repo.root / "packages/ep/pyproject.toml").write_text("changed")
    with pytest.raises(SystemExit, match="uncommitted changes. Fix: commit or stash them"):
        release.cut(repo, "ep", "2026-12-03")


def test_versions_only_go_up(repo: release.Repo):
    assert release.cut(repo, "compiler", "2026-12-03") == f"compiler-v{repo.version('compiler')}"
    version_file = repo.root / "packages/compiler/src/hipdnn_ep_compiler/_version.py"
    _edit(version_file, f'"{repo.version("compiler")}"', '"0.0.9"')
    _git(repo.root, "commit", "-q", "-am", "downgrade")
    assert any("is not newer than the last release" in p for p in release.check(repo, "compiler"))
