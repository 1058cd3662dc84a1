"""Command line: generate the ABI files and run the ABI gates.

    python -m hipdnn_ep_abi generate --out DIR
    python -m hipdnn_ep_abi json --out FILE | --check FILE
    python -m hipdnn_ep_abi check-compat [--released FILE]
    python -m hipdnn_ep_abi check-symbols [--delete-on-failure] LIBRARY
    python -m hipdnn_ep_abi check-version PYPROJECT
    python -m hipdnn_ep_abi check-pins [--root DIR] [--fix]
    python -m hipdnn_ep_abi release
    python -m hipdnn_ep_abi contracts check-compat | generate [--check] | release
Each check prints every violation, naming the function, and exits 1 if any.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from . import compat, contracts, generate, pins, symbols
from ._toml import loads as load_toml
from .model import DEFAULT_MANIFEST, Manifest, load

RELEASED_DIR = DEFAULT_MANIFEST.parent / "released"


def released_snapshots(directory: Path = RELEASED_DIR) -> list[Path]:
    """Every released manifest snapshot (released/MAJOR.MINOR.toml), oldest first."""
    def key(p: Path) -> tuple[int, int]:
        major, minor = p.stem.split(".")
        return int(major), int(minor)
    return sorted((p for p in directory.glob("*.toml") if re.fullmatch(r"\d+\.\d+", p.stem)), key=key)


def last_released(directory: Path = RELEASED_DIR) -> Path:
    """The newest released manifest snapshot."""
    snapshots = released_snapshots(directory)
    if not snapshots:
        raise SystemExit(f"no released manifest in {directory}")
    return snapshots[-1]


def _report(title: str, violations: list) -> int:
    if not violations:
        print(f"{title}: ok")
        return 0
    print(f"{title}: {len(violations)} violation(s)", file=sys.stderr)
    for v in violations:
        print(f"  - {v}", file=sys.stderr)
    return 1


def check_version(m: Manifest, pyproject: Path) -> list[compat.Violation]:
    version = load_toml(pyproject.read_text())["project"]["version"]
    major, minor = (int(p) for p in version.split(".")[:2])
    if (major, minor) != (m.major, m.minor):
        return [compat.Violation("version", f"{pyproject} has version {version}, whose MAJOR.MINOR must equal the "
                                            f"ABI {m.major}.{m.minor} (a runtime release is an ABI minor). Fix: "
                                            f"set version = \"{m.major}.{m.minor}.0\"")]
    return []


# The JSON contracts: kind -> (its file, what `contracts generate` writes from it, relative to the repository root).
CONTRACTS = {"metadata": lambda: contracts.METADATA, "protocol": lambda: contracts.PROTOCOL}
CONTRACT_COPIES = {
    "metadata": {"packages/compiler/src/hipdnn_ep_compiler/abi/metadata_schema.py":
                 lambda c: contracts.python_module(c, "metadata.toml")},
    "protocol": {"packages/compiler/src/hipdnn_ep_compiler/abi/protocol_schema.py":
                 lambda c: contracts.python_module(c, "protocol.toml")},
}
CONTRACT_README = "packages/abi/README.md"


def _check_compat(kind: str, c: contracts.Contract) -> list[compat.Violation]:
    found = contracts.check_released(kind, c)
    if not contracts.released_snapshots(kind):
        found.append(compat.Violation(c.name, f"no released snapshot in released/{kind}/. Fix: "
                                              "`python -m hipdnn_ep_abi contracts release`"))
    if kind == "metadata":
        artifact = load(DEFAULT_MANIFEST).artifact
        if artifact is not None and artifact.format != c.major:
            found.append(compat.Violation(c.name, f"major {c.major} must be the artifact format the manifest's "
                                                  f"[artifact] table declares ({artifact.format})"))
    return found


def _contracts(action: str, check: bool, root: Path) -> int:
    loaded = {kind: contracts.load(path()) for kind, path in CONTRACTS.items()}
    if action == "check-compat":
        rc = 0
        for kind, c in loaded.items():
            rc |= _report(f"bump rules of the {c.name} {c.major}.{c.minor}", _check_compat(kind, c))
        return rc
    if action == "release":
        rc = 0
        for kind, c in loaded.items():
            source = CONTRACTS[kind]()
            target = contracts.RELEASED_DIR / kind / f"{c.major}.{c.minor}.toml"
            text = source.read_text()
            if target.exists() and target.read_text() != text:
                print(f"{kind}/{target.name} is already released and differs from {source.name}: a released "
                      "schema is immutable. Fix: raise its minor (or major)", file=sys.stderr)
                rc = 1
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
            print(target)
        return rc
    wanted = {}
    readme = root / CONTRACT_README
    readme_text = readme.read_text() if readme.exists() else ""
    for kind, c in loaded.items():
        wanted.update({root / rel: make(c) for rel, make in CONTRACT_COPIES[kind].items()})
        readme_text = contracts.readme_with_table(readme_text, c, kind)
    wanted[readme] = readme_text
    stale = [p for p, text in wanted.items() if not p.exists() or p.read_text() != text]
    if check:
        for p in stale:
            print(f"{p.relative_to(root)} is stale: regenerate it with `python -m hipdnn_ep_abi contracts generate`",
                  file=sys.stderr)
        if not stale:
            print("generated copies of the contracts: current")
        return 1 if stale else 0
    for p in stale:
        p.write_text(wanted[p])
        print(p.relative_to(root))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m hipdnn_ep_abi", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--manifest", type=Path, default=DEFAULT_MANIFEST)
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate", help="write the header, version script, checks and JSON")
    g.add_argument("--out", type=Path, required=True)
    j = sub.add_parser("json", help="write the JSON manifest, or check a checked-in copy is current")
    grp = j.add_mutually_exclusive_group(required=True)
    grp.add_argument("--out", type=Path)
    grp.add_argument("--check", type=Path)
    c = sub.add_parser("check-compat", help="bump rules against the last released manifest")
    c.add_argument("--released", type=Path)
    s = sub.add_parser("check-symbols", help="the library exports exactly the manifest's functions")
    s.add_argument("library", type=Path)
    s.add_argument("--delete-on-failure", action="store_true",
                   help="remove the library when the check fails (a build step: no broken file stays behind)")
    v = sub.add_parser("check-version", help="the wheel's version major equals the ABI major")
    v.add_argument("pyproject", type=Path)
    sub.add_parser("release", help="snapshot the manifest as released/MAJOR.MINOR.toml")
    pp = sub.add_parser("check-pins", help="the wheels' versions and requirements follow the manifest")
    pp.add_argument("--root", type=Path, default=DEFAULT_MANIFEST.parents[2], help="repository root")
    pp.add_argument("--fix", action="store_true",
                    help="record a new compiler version's bundled manifest and rewrite the pins, then check")
    k = sub.add_parser("contracts", help="the JSON contracts (metadata.toml, protocol.toml): bump rules, "
                                         "generated copies, release")
    k.add_argument("action", choices=["check-compat", "generate", "release"])
    k.add_argument("--check", action="store_true", help="with generate: fail when a generated copy is stale")
    k.add_argument("--root", type=Path, default=DEFAULT_MANIFEST.parents[2], help="repository root")
    args = ap.parse_args(argv)
    if args.cmd == "contracts":
        return _contracts(args.action, args.check, args.root)

    m = load(args.manifest)
    if args.cmd == "generate":
        for path in generate.write_all(m, args.out):
            print(path)
        return 0
    if args.cmd == "json":
        text = generate.manifest_json_text(m)
        if args.out:
            args.out.write_text(text)
            return 0
        if not args.check.exists() or args.check.read_text() != text:
            print(f"{args.check} is stale: regenerate it with "
                  f"`python -m hipdnn_ep_abi json --out {args.check}`", file=sys.stderr)
            return 1
        print(f"{args.check}: current")
        return 0
    if args.cmd == "check-compat":
        # Against every release of the newest released major (each published runtime of it
        # exports its snapshot), or the one snapshot given.
        if args.released:
            snapshots = [args.released]
        else:
            newest = load(last_released())
            snapshots = [p for p in released_snapshots() if load(p).major == newest.major]
        rc = 0
        for released in snapshots:
            old = load(released)
            rc |= _report(f"bump rules {old.major}.{old.minor} ({released.name}) -> {m.major}.{m.minor}",
                          compat.check(old, m))
        return rc
    if args.cmd == "check-symbols":
        rc = _report(f"exported symbols of {args.library.name}", symbols.check(m, args.library))
        if rc and args.delete_on_failure:
            args.library.unlink(missing_ok=True)
            print(f"deleted {args.library}: its exports differ from {args.manifest.name}. Fix: define every "
                  f"function the manifest declares (or change the manifest with the bump the rules ask for)",
                  file=sys.stderr)
        return rc
    if args.cmd == "check-version":
        return _report("wheel version", check_version(m, args.pyproject))
    if args.cmd == "check-pins":
        repo = pins.Repo(args.root)
        if args.fix:
            for path in pins.fix(m, repo):
                print(f"updated {path}")
        return _report("pins between the wheels", pins.check(m, repo))
    if args.cmd == "release":
        target = RELEASED_DIR / f"{m.major}.{m.minor}.toml"
        text = args.manifest.read_text()
        if target.exists() and target.read_text() != text:
            print(f"{target.name} is already released and differs from {args.manifest.name}: a released "
                  f"ABI is immutable. Fix: bump the ABI minor (or major) in the manifest", file=sys.stderr)
            return 1
        target.write_text(text)
        print(target)
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
