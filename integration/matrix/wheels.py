"""Job 1: every release of each wheel in HEAD's history plus HEAD, each built once and cached by content."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

from .common import BUILT_FROM, NAMES, ROOT, THIRD_PARTY, release


@dataclass(frozen=True)
class Source:
    package: str
    label: str  # the release version, or "HEAD"
    commit: str | None  # None: the working tree
    key: str  # content key: git tree ids of BUILT_FROM
    in_worktree: bool = False  # the working tree holds the same content (built there: incremental)


def _git(*args: str, env: dict | None = None) -> str:
    proc = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"matrix: git {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc.stdout.strip()


def _key(package: str, tree: str) -> str:
    # A path an older release does not have (a script renamed since) counts as absent.
    listed = {line.split("\t", 1)[1]: line.split()[2]
              for line in _git("ls-tree", tree, "--", *BUILT_FROM[package]).splitlines()}
    ids = [listed.get(path, "absent") for path in BUILT_FROM[package]]
    return hashlib.sha256(" ".join(ids).encode()).hexdigest()[:20]


def working_tree() -> str:
    """A git tree of the working tree as it is (tracked and untracked, ignored files left out)."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "GIT_INDEX_FILE": str(Path(tmp) / "index")}
        _git("read-tree", "HEAD", env=env)
        _git("add", "-A", "--", *sorted({p for paths in BUILT_FROM.values() for p in paths}), env=env)
        return _git("write-tree", env=env)


def sources() -> dict[str, list[Source]]:
    """Every release of each package reachable from HEAD, oldest first, then HEAD unless it is the
    newest release's content."""
    repo = release.Repo(ROOT)
    head_tree = working_tree()
    out: dict[str, list[Source]] = {}
    for package in NAMES:
        head = Source(package, "HEAD", None, _key(package, head_tree), in_worktree=True)
        found = [Source(package, r.version, r.commit, key, in_worktree=key == head.key)
                 for r in repo.releases(package) for key in [_key(package, r.commit)]]
        if not any(s.key == head.key for s in found):
            found.append(head)
        out[package] = found
    return out


@dataclass(frozen=True)
class Wheel:
    package: str
    label: str
    path: Path
    version: str
    requires: tuple[str, ...]  # Requires-Dist
    abi: tuple[int, int]  # runtime: its ABI; compiler: (major, newest minor); ep: the ABI it needs
    note: str = ""  # what was done to it (the regression replay)

    @property
    def name(self) -> str:
        return NAMES[self.package]

    @property
    def title(self) -> str:
        text = self.version if self.label == self.version else f"{self.version} ({self.label})"
        return f"{text} [{self.note}]" if self.note else text


def read_wheel(package: str, label: str, path: Path, note: str = "") -> Wheel:
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        meta = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        if package == "runtime":
            abi = json.loads(z.read(next(n for n in names if n.endswith("hipdnn_ep_runtime/abi_manifest.json"))))
            pair = (abi["abi"]["major"], abi["abi"]["minor"])
        elif package == "compiler":
            abi = json.loads(z.read(next(n for n in names if n.endswith("hipdnn_ep_compiler/abi/runtime_abi_v1.json"))))
            pair = (abi["abi"]["major"], abi["abi"]["minor"])
        else:
            info = z.read(next(n for n in names if n.endswith("hipdnn_ep/_abi_info.py"))).decode()
            pair = tuple(int(v) for v in re.search(r"REQUIRED_RUNTIME_ABI = \((\d+), (\d+)\)", info).groups())
    version = re.search(r"(?m)^Version: (\S+)$", meta)[1]
    requires = tuple(re.findall(r"(?m)^Requires-Dist: (.+)$", meta))
    return Wheel(package, label, path, version, requires, pair, note)


def fetch_third_party() -> None:
    """The headers of THIRD_PARTY (ORT's, nlohmann/json), fetched once by tools/release/fetch_third_party.sh."""
    if not ((THIRD_PARTY / "ort-headers/onnxruntime_ep_c_api.h").exists()
            and (THIRD_PARTY / "nlohmann-json/nlohmann/json.hpp").exists()):
        subprocess.run(["bash", str(ROOT / "tools/release/fetch_third_party.sh"), str(THIRD_PARTY)], check=True)


class Builder:
    """Builds (once per content key) and caches the wheels."""

    def __init__(self, cache: Path, backends: str = "cpu"):
        self.cache = cache
        self.backends = backends

    def wheel(self, source: Source) -> Path:
        suffix = "" if source.package != "runtime" or self.backends == "cpu" else "-" + self.backends.replace(";", "+")
        dest = self.cache / "wheels" / f"{source.package}-{source.key}{suffix}"
        found = sorted(dest.glob("*.whl"))
        if found:
            return found[0]
        root = ROOT if source.in_worktree else self._export(source.commit)
        cmd = ["uv", "build", "--wheel", "--quiet", "--out-dir", str(dest.with_suffix(".tmp")),
               str(root / "packages" / source.package)]
        if source.package in ("ep", "runtime"):
            # The headers of third_party/ (an exported commit has none). Releases built before
            # tools/release/fetch_third_party.sh ignore the nlohmann/json define.
            fetch_third_party()
            cmd += ["-C", f"cmake.define.HIPDNN_EP_JSON_INCLUDE_DIR={THIRD_PARTY / 'nlohmann-json'}"]
        if source.package == "ep":
            cmd += ["-C", f"cmake.define.HIPDNN_EP_ORT_INCLUDE_DIR={THIRD_PARTY / 'ort-headers'}"]
        env = {**os.environ, "HIPDNN_EP_BACKENDS": self.backends}
        print(f"matrix: building {NAMES[source.package]} {source.label} ({source.key})", flush=True)
        t0 = time.monotonic()
        shutil.rmtree(dest.with_suffix(".tmp"), ignore_errors=True)
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            raise SystemExit(f"matrix: building {NAMES[source.package]} {source.label} failed:\n"
                             f"{(proc.stdout + proc.stderr)[-4000:]}")
        dest.with_suffix(".tmp").rename(dest)
        print(f"matrix: built {NAMES[source.package]} {source.label} in {time.monotonic() - t0:.0f} s", flush=True)
        return sorted(dest.glob("*.whl"))[0]

    def _export(self, commit: str) -> Path:
        out = self.cache / "src" / commit[:12]
        if not (out / ".complete").exists():
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir(parents=True)
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", commit],
                                     capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
            (out / ".complete").write_text(commit)
        return out
