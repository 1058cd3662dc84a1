"""The JSON contracts between the wheels (the artifact metadata), declared as data like the C ABI.

A contract file (metadata.toml) declares a schema version MAJOR.MINOR and a flat list of fields,
each named by its path (`a.b`: member b of object a; `a[].b`: member b of each item of list a) with
a type, whether it is required, the minor that added it and a line of documentation. From it come:
the bump rules against its released snapshots (`check`), a validator the compiler runs on what it
writes and reads (the generated Python module), and the README's table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ._toml import loads as load_toml
from .compat import Violation

ROOT = Path(__file__).resolve().parent.parent
METADATA = ROOT / "metadata.toml"
RELEASED_DIR = ROOT / "released"
SCALARS = ("int", "string", "bool", "size", "object", "any")
TYPE = re.compile(r"(?:list<)?(?:" + "|".join(SCALARS) + r")\??(?:>)?")


@dataclass(frozen=True)
class Field:
    path: str
    type: str
    required: bool
    since: int
    doc: str


@dataclass(frozen=True)
class Contract:
    name: str  # "artifact metadata"
    major: int
    minor: int
    fields: tuple[Field, ...]

    def by_path(self) -> dict[str, Field]:
        return {f.path: f for f in self.fields}


def parse(text: str, where: str = "contract") -> Contract:
    raw = load_toml(text)
    head = raw.get("schema", {})
    try:
        name, major, minor = head["name"], int(head["major"]), int(head["minor"])
    except KeyError as e:
        raise ValueError(f"{where}: [schema] needs name, major and minor (missing {e})") from None
    fields, seen = [], set()
    for item in raw.get("fields", []):
        path, type_ = item.get("path"), item.get("type")
        if not isinstance(path, str) or not re.fullmatch(r"[a-z_]+(\[\])?(\.[a-z_]+(\[\])?)*", path):
            raise ValueError(f"{where}: a field's path must be like 'a', 'a.b' or 'a[].b', got {path!r}")
        if path in seen:
            raise ValueError(f"{where}: field '{path}' is declared twice")
        if not isinstance(type_, str) or not TYPE.fullmatch(type_) or type_.startswith("list<") != type_.endswith(">"):
            raise ValueError(f"{where}: field '{path}' has type {type_!r}; types are {', '.join(SCALARS)}, "
                             "list<T> and T? (T or null)")
        parent = _parent(path)
        if parent is not None and parent not in seen:
            raise ValueError(f"{where}: field '{path}' comes before its parent '{parent}' is declared")
        since = int(item.get("since", 0))
        if since > minor:
            raise ValueError(f"{where}: field '{path}' is since {since}, after the schema's minor {minor}")
        seen.add(path)
        fields.append(Field(path, type_, bool(item.get("required", False)), since, str(item.get("doc", ""))))
    return Contract(name, major, minor, tuple(fields))


def load(path: Path = METADATA) -> Contract:
    return parse(Path(path).read_text(), str(path))


def _parent(path: str) -> str | None:
    """The field that holds `path`: `a[].b` -> `a`, `a.b` -> `a`, `a` -> None."""
    if "." not in path:
        return None
    head = path.rsplit(".", 1)[0]
    return head[:-2] if head.endswith("[]") else head


def check(old: Contract, new: Contract) -> list[Violation]:
    """The bump rules of `new` against the released `old` (same as the C ABI's; see metadata.toml)."""
    what = new.name
    if new.major != old.major:
        return []  # a new format (major) may change anything; its readers say which formats they read
    out = []
    if new.minor < old.minor:
        out.append(Violation(what, f"minor {new.minor} is below the released {old.major}.{old.minor}"))
    current = new.by_path()
    for f in old.fields:
        g = current.get(f.path)
        if g is None:
            out.append(Violation(f"{what} field '{f.path}'",
                                 f"removed without a major bump (released in {old.major}.{old.minor}); readers of "
                                 f"format {old.major} read it. Fix: keep it (deprecate it in its doc), or raise the "
                                 "major (a new artifact format)"))
            continue
        if g.type != f.type:
            out.append(Violation(f"{what} field '{f.path}'",
                                 f"retyped from {f.type} to {g.type} without a major bump (released in "
                                 f"{old.major}.{old.minor}). Fix: add a field of the new type instead, or raise "
                                 "the major"))
        if g.required and not f.required:
            out.append(Violation(f"{what} field '{f.path}'",
                                 f"made required without a major bump: artifacts of {old.major}.{old.minor} may "
                                 "lack it. Fix: keep it optional, or raise the major"))
        if g.since != f.since:
            out.append(Violation(f"{what} field '{f.path}'", f"since changed from {f.since} to {g.since}"))
    released = old.by_path()
    for g in new.fields:
        if g.path in released:
            continue
        if g.required and (_parent(g.path) is None or _parent(g.path) in released):
            out.append(Violation(f"{what} field '{g.path}'",
                                 f"added as required without a major bump: artifacts of {old.major}.{old.minor} "
                                 "lack it. Fix: make it optional, or raise the major"))
        if g.since <= old.minor:
            out.append(Violation(f"{what} field '{g.path}'",
                                 f"added with since = {g.since}, but {old.major}.{old.minor} is released and "
                                 f"frozen. Fix: raise [schema] minor to {old.minor + 1} and set since = "
                                 f"{old.minor + 1}"))
    return out


def released_snapshots(kind: str, directory: Path = RELEASED_DIR) -> list[Path]:
    """Every released snapshot of a contract (released/<kind>/MAJOR.MINOR.toml), oldest first."""
    def key(p: Path) -> tuple[int, int]:
        major, minor = p.stem.split(".")
        return int(major), int(minor)
    folder = directory / kind
    return sorted((p for p in folder.glob("*.toml") if re.fullmatch(r"\d+\.\d+", p.stem)), key=key)


def check_released(kind: str, new: Contract, directory: Path = RELEASED_DIR) -> list[Violation]:
    out = []
    for snapshot in released_snapshots(kind, directory):
        old = load(snapshot)
        out += [Violation(v.name, f"{v.message} (against {kind}/{snapshot.name})") for v in check(old, new)]
    return out


# ---------------------------------------------------------------- generated files

PY_BANNER = "Generated by hipdnn_ep_abi from packages/abi/{source}. Do not edit."


def python_module(c: Contract, source: str = "metadata.toml") -> str:
    """A module with the fields as data and a validator the compiler runs on metadata it writes and reads."""
    rows = "".join(f"    ({f.path!r}, {f.type!r}, {f.required!r}),\n" for f in c.fields)
    return f'''"""The {c.name} schema {c.major}.{c.minor}: its fields and a validator.

{PY_BANNER.format(source=source)}
"""

from __future__ import annotations

MAJOR = {c.major}
MINOR = {c.minor}
# (path, type, required): `a.b` is member b of object a, `a[].b` member b of each item of list a
FIELDS = (
{rows})
''' + _PY_VALIDATOR


_PY_VALIDATOR = '''

def _is(value, type_: str) -> bool:
    if type_.endswith("?") and value is None:
        return True
    type_ = type_.rstrip("?")
    if type_.startswith("list<"):
        return isinstance(value, list) and all(_is(v, type_[5:-1]) for v in value)
    if type_ == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if type_ == "size":
        return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))
    if type_ == "string":
        return isinstance(value, str)
    if type_ == "bool":
        return isinstance(value, bool)
    if type_ == "object":
        return isinstance(value, dict)
    return True  # any


def _children(path: str) -> list[tuple[str, str, bool]]:
    prefix = path + "." if path else ""
    return [f for f in FIELDS if f[0].startswith(prefix) and "." not in f[0][len(prefix):].replace("[]", "")]


def _walk(obj: dict, path: str, where: str, out: list[str], known_only: bool) -> None:
    declared = {f[0]: f for f in _children(path)}
    prefix = path + "." if path else ""
    for key in obj:
        if known_only and prefix + key not in declared:
            out.append(f"{where}{key}: not a declared field")
    for full, type_, required in declared.values():
        name = full[len(prefix):]
        if name not in obj:
            if required:
                out.append(f"{where}{name}: missing (required)")
            continue
        value = obj[name]
        if not _is(value, type_):
            out.append(f"{where}{name}: {type(value).__name__} where the schema says {type_}")
        elif type_ == "object":
            _walk(value, full, f"{where}{name}.", out, known_only)
        elif type_ == "list<object>":
            for i, item in enumerate(value):
                _walk(item, full + "[]", f"{where}{name}[{i}].", out, known_only)


def problems(metadata: object, known_only: bool = True) -> list[str]:
    """What in `metadata` breaks the schema, each naming the field (empty when it conforms).

    known_only: a field the schema does not declare is a problem too (the writer's check); a reader
    passes False, since a newer minor of the same format may add optional fields."""
    if not isinstance(metadata, dict):
        return [f"the metadata is a {type(metadata).__name__}, not an object"]
    out: list[str] = []
    _walk(metadata, "", "", out, known_only)
    return out
'''


def markdown_table(c: Contract) -> str:
    lines = [f"| field ({c.name} {c.major}.{c.minor}) | type | required | since | meaning |",
             "| --- | --- | --- | --- | --- |"]
    for f in c.fields:
        lines.append(f"| `{f.path}` | {f.type.replace('<', '&lt;').replace('>', '&gt;')} | "
                     f"{'yes' if f.required else 'no'} | {c.major}.{f.since} | {f.doc} |")
    return "\n".join(lines) + "\n"


TABLE_BEGIN = "<!-- metadata table: generated by `python -m hipdnn_ep_abi contracts generate` -->"
TABLE_END = "<!-- end of the metadata table -->"


def readme_with_table(readme: str, c: Contract) -> str:
    """The README with its generated table replaced (between the two markers)."""
    begin, end = readme.find(TABLE_BEGIN), readme.find(TABLE_END)
    if begin < 0 or end < begin:
        raise ValueError(f"the README lacks the markers {TABLE_BEGIN!r} ... {TABLE_END!r}")
    return readme[:begin] + TABLE_BEGIN + "\n" + markdown_table(c) + readme[end:]
