"""Pins between the three wheels, derived from the ABI manifest (`check-pins`).

pip only refuses what the wheels' metadata refuses, so every version constraint between our
wheels is a function of the manifest, checked here (or rewritten with ``--fix``):

* runtime: version MAJOR.MINOR equals the ABI MAJOR.MINOR (a runtime wheel *is* an ABI minor);
* compiler: its bundled manifest JSON and the protocol versions it answers are recorded, by
  hash and list, against the compiler version in ``packages/compiler/abi-lock.toml``; a changed
  manifest or protocol list with the same compiler version is refused (two different compilers
  would share a version, and the EP's compile cache keys on it). Its ``runtime`` extra is
  ``hipdnn-ep-runtime>=MAJOR.0,<MAJOR+1``: it emits code for every minor of its ABI major;
* EP: ``hipdnn-ep-runtime>=MAJOR.MINOR,<MAJOR+1`` (it is built against this minor's header) and
  ``hipdnn-ep-compiler[runtime]>=LOW,<HIGH`` where LOW is the oldest recorded compiler of the
  ABI major that answers the protocol version the EP speaks, and HIGH the next compiler major
  (a compiler that drops an ABI major bumps its first version component).
Standard library only, like the rest of this package.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from ._toml import loads as load_toml
from .compat import Violation
from .model import Manifest

RUNTIME, COMPILER, EP = "hipdnn-ep-runtime", "hipdnn-ep-compiler", "hipdnn-ep"
COMPILER_JSON = "packages/compiler/src/hipdnn_ep_compiler/abi/runtime_abi_v1.json"
COMPILER_VERSION = "packages/compiler/src/hipdnn_ep_compiler/_version.py"
LOCK = "packages/compiler/abi-lock.toml"
# The compiler protocol: the versions the compiler answers, and the one the EP speaks.
COMPILER_PROTOCOLS = "packages/compiler/src/hipdnn_ep_compiler/protocol.py"
# The EP speaks the major of the protocol declared in packages/abi (its kCompilerProtocolVersion is
# the generated protocol::kMajor; tests/test_protocol_contract.py checks that).
EP_PROTOCOL = "packages/abi/protocol.toml"
LOCK_HEADER = """\
# Compiler version -> the runtime ABI manifest it bundles (written by
# `python -m hipdnn_ep_abi check-pins --fix`; never edit an existing entry).
# A changed bundled manifest needs a new compiler version: the EP's compile
# cache and every artifact's metadata identify the compiler by its version.
# `protocols` lists the compiler protocol versions that compiler answers.
"""


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:3])


@dataclass(frozen=True)
class Repo:
    root: Path

    def pyproject(self, package: str) -> Path:
        return self.root / "packages" / package / "pyproject.toml"

    def version(self, package: str) -> str:
        if package == "compiler":
            m = re.search(r'__version__\s*=\s*"([^"]+)"', (self.root / COMPILER_VERSION).read_text())
            if m is None:
                raise ValueError(f"no __version__ in {COMPILER_VERSION}")
            return m[1]
        return load_toml(self.pyproject(package).read_text())["project"]["version"]

    def compiler_protocols(self) -> list[int]:
        """The protocol versions the compiler at this checkout answers (``PROTOCOLS = (1, 2)``)."""
        m = re.search(r"^PROTOCOLS\s*=\s*\(([^)]*)\)", (self.root / COMPILER_PROTOCOLS).read_text(), re.M)
        if m is None:
            raise ValueError(f"no PROTOCOLS tuple in {COMPILER_PROTOCOLS}")
        return sorted(int(v) for v in re.findall(r"\d+", m[1]))

    def ep_protocol(self) -> int:
        """The protocol version the EP at this checkout speaks (protocol.toml's ``[schema] major``)."""
        m = re.search(r"^major\s*=\s*(\d+)", (self.root / EP_PROTOCOL).read_text(), re.M)
        if m is None:
            raise ValueError(f"no [schema] major in {EP_PROTOCOL}")
        return int(m[1])

    def bundled_hash(self) -> str:
        return hashlib.sha256((self.root / COMPILER_JSON).read_bytes()).hexdigest()

    def lock(self) -> dict[str, dict]:
        path = self.root / LOCK
        return load_toml(path.read_text()) if path.exists() else {}


def expected_pins(m: Manifest, repo: Repo) -> dict[str, str]:
    """The requirement each pin must read, keyed by where it lives."""
    lock = repo.lock()
    speaks = repo.ep_protocol()
    usable = sorted((v for v, e in lock.items() if e.get("abi_major") == m.major and speaks in e.get("protocols", [])),
                    key=_version_tuple)
    low = usable[0] if usable else repo.version("compiler")
    high = str(_version_tuple(low)[0] + 1)
    return {
        "compiler:runtime": f"{RUNTIME}>={m.major}.0,<{m.major + 1}",
        "ep:runtime": f"{RUNTIME}>={m.major}.{m.minor},<{m.major + 1}",
        "ep:compiler": f"{COMPILER}[runtime]>={low},<{high}",
    }


def _requirement(requirements: list[str], name: str) -> str | None:
    for r in requirements:
        base = re.split(r"[\[<>=!~; ]", r, maxsplit=1)[0]
        if base == name:
            return r.replace(" ", "")
    return None


def check(m: Manifest, repo: Repo) -> list[Violation]:
    out: list[Violation] = []
    runtime_version = repo.version("runtime")
    if _version_tuple(runtime_version)[:2] != (m.major, m.minor):
        where = repo.pyproject("runtime").relative_to(repo.root)
        out.append(Violation(RUNTIME, f"version {runtime_version} must be {m.major}.{m.minor}.x, the ABI the "
                                      f"manifest declares (a runtime release is an ABI minor). Fix: set version = "
                                      f"\"{m.major}.{m.minor}.0\" in {where}"))

    compiler_version = repo.version("compiler")
    entry = repo.lock().get(compiler_version)
    digest = repo.bundled_hash()
    if entry is None:
        out.append(Violation(COMPILER, f"version {compiler_version} is not recorded in {LOCK}. Fix: run "
                                       f"`python -m hipdnn_ep_abi check-pins --fix`"))
    elif entry.get("manifest_sha256") != digest:
        newer = ".".join(map(str, (*_version_tuple(compiler_version)[:2], _version_tuple(compiler_version)[2] + 1)))
        out.append(Violation(COMPILER, f"its bundled ABI manifest changed since version {compiler_version} recorded "
                                       f"it ({entry.get('manifest_sha256', '?')[:12]} -> {digest[:12]}), but its "
                                       f"version did not: two different compilers would both be {compiler_version}. "
                                       f"Fix: bump {COMPILER_VERSION} (e.g. to {newer}), then run "
                                       f"`python -m hipdnn_ep_abi check-pins --fix`"))
    elif entry.get("protocols") != repo.compiler_protocols():
        out.append(Violation(COMPILER, f"it answers compiler protocols {repo.compiler_protocols()} but {LOCK} "
                                       f"records {entry.get('protocols')} for version {compiler_version}: an EP "
                                       f"would pick it by a protocol it does not answer. Fix: bump "
                                       f"{COMPILER_VERSION}, then run `python -m hipdnn_ep_abi check-pins --fix`"))
    elif (entry.get("abi_major"), entry.get("abi_minor")) != (m.major, m.minor):
        out.append(Violation(COMPILER, f"{LOCK} records ABI {entry.get('abi_major')}.{entry.get('abi_minor')} for "
                                       f"{compiler_version}, the manifest is {m.major}.{m.minor}"))

    want = expected_pins(m, repo)
    if repo.ep_protocol() not in repo.compiler_protocols():
        out.append(Violation(EP, f"speaks compiler protocol {repo.ep_protocol()} ({EP_PROTOCOL}), which this "
                                 f"checkout's compiler does not answer ({repo.compiler_protocols()}). Fix: teach "
                                 f"{COMPILER_PROTOCOLS} that protocol and bump the compiler's version"))
    compiler_extras = load_toml(repo.pyproject("compiler").read_text())["project"].get("optional-dependencies", {})
    have = _requirement(compiler_extras.get("runtime", []), RUNTIME)
    if have != want["compiler:runtime"]:
        out.append(Violation(COMPILER, f"extra 'runtime' requires {have or 'nothing of ' + RUNTIME}, the ABI says "
                                       f"{want['compiler:runtime']}. Fix: `python -m hipdnn_ep_abi check-pins --fix`"))
    ep_deps = load_toml(repo.pyproject("ep").read_text())["project"].get("dependencies", [])
    for key, name in (("ep:runtime", RUNTIME), ("ep:compiler", COMPILER)):
        have = _requirement(ep_deps, name)
        if have != want[key]:
            out.append(Violation(EP, f"requires {have or 'nothing of ' + name}, the ABI says {want[key]}: pip would "
                                     f"install it beside wheels the ABI refuses. Fix: "
                                     f"`python -m hipdnn_ep_abi check-pins --fix`"))
    return out


def fix(m: Manifest, repo: Repo) -> list[Path]:
    """Records the compiler's bundled manifest (a new version only) and rewrites the pins."""
    changed = []
    lock = repo.lock()
    version = repo.version("compiler")
    digest = repo.bundled_hash()
    if version not in lock:
        lock[version] = {"manifest_sha256": digest, "abi_major": m.major, "abi_minor": m.minor,
                         "protocols": repo.compiler_protocols()}
        lines = [LOCK_HEADER]
        for v in sorted(lock, key=_version_tuple):
            e = lock[v]
            lines.append(f'\n["{v}"]\nmanifest_sha256 = "{e["manifest_sha256"]}"\n'
                         f'abi_major = {e["abi_major"]}\nabi_minor = {e["abi_minor"]}\n'
                         f'protocols = {e.get("protocols", [])}\n')
        (repo.root / LOCK).write_text("".join(lines))
        changed.append(repo.root / LOCK)
    want = expected_pins(m, repo)
    for package, key, name in (("compiler", "compiler:runtime", RUNTIME), ("ep", "ep:runtime", RUNTIME),
                               ("ep", "ep:compiler", COMPILER)):
        path = repo.pyproject(package)
        text = path.read_text()
        new = re.sub(r'"' + re.escape(name) + r'(\[[^\]]*\])?[<>=!~][^"]*"', f'"{want[key]}"', text)
        if new != text:
            path.write_text(new)
            changed.append(path)
    return changed
