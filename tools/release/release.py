#!/usr/bin/env python3
"""Release a wheel of this repository: check the bump rules, snapshot the ABI, date the changelog, tag.

    python tools/release/release.py check [runtime|compiler|ep ...]
    python tools/release/release.py cut runtime|compiler|ep [--date YYYY-MM-DD] [--no-tag]

    python tools/release/release.py list [runtime|compiler|ep ...]

Each wheel is versioned and released on its own; a release is the commit whose subject is
``Release <package> <version>``, tagged ``<package>-v<version>`` (``runtime-v1.1.0``,
``compiler-v0.2.0``, ``ep-v0.1.0``), from which the wheel builds again. A release is found by its
tag or, where the tag did not travel with the history (a clone without tags, a mirror), by that
commit subject in HEAD's history (``git log --grep``); ``list`` prints what was found and how.

``check`` passes for a package whose version is already released (nothing to release; its pins are
still checked) and otherwise refuses, naming the fix:

* a version that is not newer than the package's last release tag (or is already tagged);
* a changelog without a ``## <version> (unreleased)`` section with at least one entry;
* runtime: a version whose MAJOR.MINOR is not the ABI's, or a manifest that breaks the bump
  rules against a released snapshot (``hipdnn_ep_abi check-compat``);
* every package: a pin between the wheels that does not follow the manifest, or a compiler whose
  bundled manifest is not recorded for its version (``hipdnn_ep_abi check-pins``).

``cut`` runs ``check`` on a clean working tree, then snapshots the manifest as
``packages/abi/released/MAJOR.MINOR.toml`` (runtime; a released snapshot is never
rewritten), dates the changelog section, commits ``Release <package> <version>`` and tags it.
Push the commit and the tag yourself.
"""

from __future__ import annotations

import argparse
import datetime
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("runtime", "compiler", "ep")


def _abi(root: Path):
    """The ABI tooling of this checkout (standard library only)."""
    sys.path.insert(0, str(root / "packages/abi"))
    try:
        import hipdnn_ep_abi.__main__ as cli
        from hipdnn_ep_abi import compat, load, pins
    finally:
        sys.path.pop(0)
    return cli, compat, load, pins


def _version_key(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:3])


RELEASE_SUBJECT = "Release {package} {version}"
VERSION_RE = r"(?P<version>\d+\.\d+\.\d+(?:[.-]?[0-9A-Za-z.]+)?)"


@dataclass(frozen=True)
class Release:
    package: str
    version: str
    commit: str
    found_by: str  # "tag", or "log" when only the release commit's subject names it

    @property
    def tag(self) -> str:
        return f"{self.package}-v{self.version}"


@dataclass(frozen=True)
class Repo:
    root: Path

    def git(self, *args: str, check: bool = True) -> str:
        proc = subprocess.run(["git", "-C", str(self.root), *args], capture_output=True, text=True)
        if check and proc.returncode != 0:
            raise SystemExit(f"git {' '.join(args)} failed: {proc.stderr.strip()}")
        return proc.stdout.strip()

    def version(self, package: str) -> str:
        _, _, _, pins = _abi(self.root)
        return pins.Repo(self.root).version(package)

    def releases(self, package: str) -> list[Release]:
        """Every release of `package` reachable from HEAD, oldest first: by tag, else by commit subject."""
        found: dict[str, Release] = {}
        subject = re.compile(rf"^{RELEASE_SUBJECT.format(package=re.escape(package), version=VERSION_RE)}$")
        log = self.git("log", "--format=%H %s", "-E", f"--grep=^Release {package} [0-9]", "HEAD", check=False)
        for line in log.splitlines():
            commit, _, text = line.partition(" ")
            m = subject.match(text)
            if m and m["version"] not in found:  # newest first: a re-cut version keeps its latest commit
                found[m["version"]] = Release(package, m["version"], commit, "log")
        for tag in self.git("tag", "--list", f"{package}-v*").splitlines():
            version = tag.removeprefix(f"{package}-v")
            if tag and re.fullmatch(VERSION_RE, version):
                commit = self.git("rev-parse", f"{tag}^{{commit}}")
                found[version] = Release(package, version, commit, "tag")
        return sorted(found.values(), key=lambda r: _version_key(r.version))

    def tags(self, package: str) -> list[str]:
        """Released versions of `package`, oldest first (tagged or found by their release commit)."""
        return [r.version for r in self.releases(package)]

    def changelog(self, package: str) -> Path:
        return self.root / "packages" / package / "CHANGELOG.md"


def _unreleased_section(text: str, version: str) -> re.Match | None:
    return re.search(rf"(?m)^## {re.escape(version)} \(unreleased\)\n(?P<body>(?:(?!^## ).*\n?)*)", text)


def released_as(repo: Repo, package: str) -> Release | None:
    """The release of `package` at its current version, if it was released."""
    version = repo.version(package)
    return next((r for r in repo.releases(package) if r.version == version), None)


def changed_since(repo: Repo, package: str, done: Release) -> int:
    """Commits after the release `done` that change what the package is built from (0 when HEAD still is that
    release): its folder, and for the runtime the ABI manifest in packages/abi."""
    paths = [f"packages/{package}"] + (["packages/abi"] if package == "runtime" else [])
    out = repo.git("rev-list", "--count", f"{done.commit}..HEAD", "--", *paths, check=False)
    return int(out) if out.isdigit() else 0


def check(repo: Repo, package: str, *, to_cut: bool = True) -> list[str]:
    """Every reason `package` cannot be released at its current version, each with its fix.

    With ``to_cut=False`` (the CI gate) a version that is already released is not a problem: the
    package simply has nothing to release; its pins and the ABI rules are still checked."""
    cli, compat, load, pins = _abi(repo.root)
    manifest_path = repo.root / "packages/abi/manifest.toml"
    m = load(manifest_path)
    problems: list[str] = []
    version = repo.version(package)
    released = repo.tags(package)
    done = released_as(repo, package)
    if done is not None:
        if to_cut:
            problems.append(f"{package} {version} is already released ({done.tag}, commit {done.commit[:12]}). "
                            f"Fix: bump its version and add a '## <new version> (unreleased)' section to its "
                            f"changelog")
    elif released and _version_key(version) <= _version_key(released[-1]):
        problems.append(f"{package} {version} is not newer than the last release {released[-1]}. Fix: bump its "
                        f"version above {released[-1]}")
    section = _unreleased_section(repo.changelog(package).read_text(), version)
    if done is None and (section is None or not section["body"].strip()):
        problems.append(f"packages/{package}/CHANGELOG.md has no '## {version} (unreleased)' section with "
                        f"entries. Fix: add one listing what changed since the last release")
    problems += [f"{v}" for v in pins.check(m, pins.Repo(repo.root))]
    bundled = repo.root / pins.COMPILER_JSON
    if package == "compiler" and bundled.read_text() != cli.generate.manifest_json_text(m):
        problems.append(f"{pins.COMPILER_JSON} is not the current manifest. Fix: python -m hipdnn_ep_abi json "
                        f"--out {pins.COMPILER_JSON}, then bump the compiler version and run check-pins --fix")
    if package == "runtime":
        released_dir = manifest_path.parent / "released"
        for snapshot in cli.released_snapshots(released_dir):
            old = load(snapshot)
            if old.major == m.major:
                problems += [f"{v} (against {snapshot.name})" for v in compat.check(old, m)]
    return problems


def cut(repo: Repo, package: str, date: str, tag: bool = True) -> str:
    """Releases `package` at its current version; returns the tag (or the commit when not tagging)."""
    if repo.git("status", "--porcelain", "--untracked-files=no"):
        raise SystemExit("the working tree has uncommitted changes. Fix: commit or stash them, then cut again")
    problems = check(repo, package)
    if problems:
        raise SystemExit(f"cannot release {package}:\n" + "\n".join(f"  - {p}" for p in problems))
    version = repo.version(package)
    changed = []
    if package == "runtime":
        _, _, load, _ = _abi(repo.root)
        manifest = repo.root / "packages/abi/manifest.toml"
        m = load(manifest)
        snapshot = manifest.parent / "released" / f"{m.major}.{m.minor}.toml"
        if snapshot.exists() and load(snapshot) != m:
            raise SystemExit(f"cannot release runtime: ABI {m.major}.{m.minor} was released as {snapshot.name} and "
                             f"the manifest differs. Fix: bump the ABI minor (or major)")
        if not snapshot.exists():  # a patch release of a released minor keeps its snapshot
            snapshot.write_text(manifest.read_text())
            changed.append(str(snapshot.relative_to(repo.root)))
    log = repo.changelog(package)
    text = log.read_text()
    log.write_text(text.replace(f"## {version} (unreleased)", f"## {version} ({date})", 1))
    changed.append(str(log.relative_to(repo.root)))
    repo.git("add", *changed)
    repo.git("commit", "-q", "-m", f"Release {package} {version}")
    if not tag:
        return repo.git("rev-parse", "HEAD")
    name = f"{package}-v{version}"
    repo.git("tag", "-a", name, "-m", f"hipdnn-ep {package} {version}")
    return name


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="tools/release/release.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", type=Path, default=ROOT, help="repository root")
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check", help="the bump rules for each package's current version")
    c.add_argument("packages", nargs="*", metavar="PACKAGE", help="runtime, compiler, ep (default: all)")
    li = sub.add_parser("list", help="every release found in HEAD's history, with its commit and how it was found")
    li.add_argument("packages", nargs="*", metavar="PACKAGE", help="runtime, compiler, ep (default: all)")
    k = sub.add_parser("cut", help="release one package: snapshot, changelog, commit, tag")
    k.add_argument("package", choices=PACKAGES)
    k.add_argument("--date", default=datetime.date.today().isoformat())
    k.add_argument("--no-tag", action="store_true", help="commit without tagging")
    args = ap.parse_args(argv)
    repo = Repo(args.root)
    if args.cmd in ("check", "list"):
        unknown = [p for p in args.packages if p not in PACKAGES]
        if unknown:
            ap.error(f"unknown package(s) {', '.join(unknown)}; choose from {', '.join(PACKAGES)}")
    if args.cmd == "list":
        for package in args.packages or PACKAGES:
            for r in repo.releases(package):
                print(f"{r.package} {r.version} {r.commit} (by {r.found_by})")
        return 0
    if args.cmd == "check":
        rc = 0
        for package in args.packages or PACKAGES:
            problems = check(repo, package, to_cut=False)
            done = released_as(repo, package)
            verdict = ("not releasable" if problems else
                       f"released ({done.tag}, commit {done.commit[:12]})" if done else "releasable")
            changed = changed_since(repo, package, done) if done else 0
            if changed:
                verdict += (f"; {changed} commit(s) since changed packages/{package}: the next release needs a new "
                            f"version and a '## <version> (unreleased)' changelog section")
            print(f"{package} {repo.version(package)}: {verdict}")
            for p in problems:
                print(f"  - {p}")
            rc |= bool(problems)
        return rc
    print(cut(repo, args.package, args.date, tag=not args.no_tag))
    return 0


if __name__ == "__main__":
    sys.exit(main())
