"""The JSON contracts between the wheels (the artifact metadata, the compiler protocol), declared as data like
the C ABI.

A contract file (metadata.toml, protocol.toml) declares a schema version MAJOR.MINOR and a flat list of fields,
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
PROTOCOL = ROOT / "protocol.toml"
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


VALIDATOR_MODULE = "schema_check"  # the generated module every schema module imports its validator from


def python_module(c: Contract, source: str = "metadata.toml") -> str:
    """A module with the fields as data and `problems`: the shared validator (`python_validator_module`) on them."""
    rows = "".join(f"    ({f.path!r}, {f.type!r}, {f.required!r}),\n" for f in c.fields)
    return f'''"""The {c.name} schema {c.major}.{c.minor}: its fields, and the validator ({VALIDATOR_MODULE}) on them.

{PY_BANNER.format(source=source)}
"""

from __future__ import annotations

from . import {VALIDATOR_MODULE}

MAJOR = {c.major}
MINOR = {c.minor}
# (path, type, required): `a.b` is member b of object a, `a[].b` member b of each item of list a
FIELDS = (
{rows})


def problems(value: object, known_only: bool = True, message: str = "") -> list[str]:
    """What in `value` breaks this schema, each naming the field; see {VALIDATOR_MODULE}.problems."""
    return {VALIDATOR_MODULE}.problems(FIELDS, value, known_only, message)
'''


def python_validator_module() -> str:
    """The validator every generated schema module runs on its fields (written once, beside them)."""
    return '''"""The validator of the generated schema modules (metadata_schema.py, protocol_schema.py): what in a
JSON document breaks a schema's field table, each problem naming the field.

''' + PY_BANNER.format(source="hipdnn_ep_abi/contracts.py") + '''
"""

from __future__ import annotations

# (path, type, required), as a schema module's FIELDS holds them
Field = tuple[str, str, bool]
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


def _children(fields: tuple[Field, ...], path: str) -> list[Field]:
    prefix = path + "." if path else ""
    return [f for f in fields if f[0].startswith(prefix) and "." not in f[0][len(prefix):].replace("[]", "")]


def _walk(fields: tuple[Field, ...], obj: dict, path: str, where: str, out: list[str], known_only: bool) -> None:
    declared = {f[0]: f for f in _children(fields, path)}
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
            _walk(fields, value, full, f"{where}{name}.", out, known_only)
        elif type_ == "list<object>":
            for i, item in enumerate(value):
                _walk(fields, item, full + "[]", f"{where}{name}[{i}].", out, known_only)


def problems(fields: tuple[Field, ...], value: object, known_only: bool = True, message: str = "") -> list[str]:
    """What in `value` breaks the schema of `fields`, each naming the field (empty when it conforms).

    message: the top-level field `value` is (a message of the protocol); "": the whole document.
    known_only: a field the schema does not declare is a problem too (the writer's check); a reader
    passes False, since a newer minor of the same major may add optional fields."""
    if message and not any(f[0] == message and f[1] == "object" for f in fields):
        raise ValueError(f"no message {message!r} in the schema")
    what = f"the {message.replace('_', ' ')}" if message else "the document"
    if not isinstance(value, dict):
        return [f"{what} is a {type(value).__name__}, not an object"]
    out: list[str] = []
    _walk(fields, value, message, "", out, known_only)
    return out
'''


def markdown_table(c: Contract) -> str:
    lines = [f"| field ({c.name} {c.major}.{c.minor}) | type | required | since | meaning |",
             "| --- | --- | --- | --- | --- |"]
    for f in c.fields:
        lines.append(f"| `{f.path}` | {f.type.replace('<', '&lt;').replace('>', '&gt;')} | "
                     f"{'yes' if f.required else 'no'} | {c.major}.{f.since} | {f.doc} |")
    return "\n".join(lines) + "\n"


def table_markers(kind: str) -> tuple[str, str]:
    return (f"<!-- {kind} table: generated by `python -m hipdnn_ep_abi contracts generate` -->",
            f"<!-- end of the {kind} table -->")


TABLE_BEGIN, TABLE_END = table_markers("metadata")


def readme_with_table(readme: str, c: Contract, kind: str = "metadata") -> str:
    """The README with the contract's generated table replaced (between its two markers)."""
    table_begin, table_end = table_markers(kind)
    begin, end = readme.find(table_begin), readme.find(table_end)
    if begin < 0 or end < begin:
        raise ValueError(f"the README lacks the markers {table_begin!r} ... {table_end!r}")
    return readme[:begin] + table_begin + "\n" + markdown_table(c) + readme[end:]


# ---------------------------------------------------------------- C++ reader (nlohmann/json)

CPP_HEADER = "hipdnn_ep/metadata_schema.h"
CPP_PROTOCOL_HEADER = "hipdnn_ep/protocol_schema.h"
# The JSON readers of field types (integers, strings, sizes, lists, optionals) that both schema headers use.
CPP_READER_HEADER = "hipdnn_ep/schema_reader.h"
CPP_READER_NAMESPACE = "hipdnn_ep::schema_reader"


@dataclass(frozen=True)
class CppStyle:
    """Where a contract's C++ header goes and what it is called."""
    header: str      # hipdnn_ep/metadata_schema.h
    namespace: str   # hipdnn_ep::metadata
    root: str | None  # the struct of the whole document (metadata), or None: each top-level object is one (protocol)
    writers: bool    # also ToJson(...) for each struct (the protocol's requests)


METADATA_CPP = CppStyle(CPP_HEADER, "hipdnn_ep::metadata", "Metadata", False)
PROTOCOL_CPP = CppStyle(CPP_PROTOCOL_HEADER, "hipdnn_ep::protocol", None, True)


def _camel(path: str) -> str:
    return "".join(part.capitalize() for part in re.split(r"[._]|\[\]", path) if part) or "Metadata"


def _cpp_type(type_: str, path: str) -> str:
    if type_.endswith("?"):
        return f"std::optional<{_cpp_type(type_[:-1], path)}>"
    if type_.startswith("list<"):
        return f"std::vector<{_cpp_type(type_[5:-1], path + '[]')}>"
    return {"int": "int64_t", "string": "std::string", "bool": "bool", "size": "Size", "any": "Json",
            "object": _camel(path)}[type_]


def cpp_header(c: Contract, source: str = "metadata.toml", style: CppStyle = METADATA_CPP) -> str:
    """Typed structs of the contract and their readers (and writers) on nlohmann/json, for the runtime and the EP.

    A reader refuses a declared field of another type, and a required one that is missing, naming the
    field (`inputs[2].dims[0]`); members the schema does not declare are ignored (a newer minor's)."""
    objects = ([""] if style.root else []) + [f.path + ("[]" if f.type.startswith("list<object") else "")
                                              for f in c.fields if f.type in ("object", "list<object>")]
    members: dict[str, list[Field]] = {o: [] for o in objects}
    for f in c.fields:
        parent = f.path.rsplit(".", 1)[0] if "." in f.path else ""
        if parent in members:
            members[parent].append(f)
    # children before parents: a struct's members are complete types where it is declared
    order = sorted(objects, key=lambda o: -o.count(".") - o.count("[]") - (0 if o == "" else 1))
    name_of = {o: style.root if o == "" else _camel(o) for o in objects}
    guard = "HIPDNN_EP_" + re.sub(r"[^A-Z0-9]", "_", style.header.split("/")[-1].upper())
    out = [f"// {PY_BANNER.format(source=source)}\n"
           f"// The {c.name} schema {c.major}.{c.minor}: typed structs and their readers"
           f"{' and writers' if style.writers else ''} (needs nlohmann/json).\n"
           f"#ifndef {guard}\n#define {guard}\n\n"
           "#include <cstdint>\n#include <optional>\n#include <string>\n#include <vector>\n\n"
           f"#include \"{CPP_READER_HEADER}\"\n\nnamespace {style.namespace} {{\n\n"
           f"constexpr int kMajor = {c.major};\nconstexpr int kMinor = {c.minor};\n\n"
           f"// The field types' readers ({CPP_READER_HEADER}); each struct's reader is below.\n"
           f"using ::{CPP_READER_NAMESPACE}::Json;\nusing ::{CPP_READER_NAMESPACE}::Read;\n"
           f"using ::{CPP_READER_NAMESPACE}::Size;\nnamespace detail = ::{CPP_READER_NAMESPACE}::detail;\n\n"]
    for o in order:
        out.append(f"struct {name_of[o]} {{\n")
        for f in members[o]:
            t = _cpp_type(f.type, f.path)
            init = "{}" if t in ("int64_t", "bool") else ""
            out.append(f"  {t if f.required else f'std::optional<{t}>'} {f.path.rsplit('.', 1)[-1]}{init};"
                       f"  // {f.doc}\n")
        out.append("};\n\n")
    out.append("// The readers of the structs: each refuses what is not an object, and reads its members.\n")
    signature = "inline bool Read(const Json& v, {}* out, const std::string& where, std::string* error)"
    for o in order:
        out.append(signature.format(name_of[o]) + ";\n")
    out.append("\n")
    for o in order:
        out.append(signature.format(name_of[o]) + " {\n"
                   "  if (!v.is_object()) return detail::Fail(where, \"an object\", error);\n")
        for f in members[o]:
            key = f.path.rsplit(".", 1)[-1]
            fn = "Required" if f.required else "Optional"
            out.append(f"  if (!detail::{fn}(v, \"{key}\", &out->{key}, where, error)) return false;\n")
        out.append("  return true;\n}\n\n")
    if style.root:
        out.append(f"// Reads a whole {c.name} object; on failure returns false and sets *error (naming the field).\n"
                   f"inline bool Read(const Json& v, {style.root}* out, std::string* error) {{\n"
                   "  return Read(v, out, \"\", error);\n}\n")
    else:
        out.append("// Reads one message; on failure returns false and sets *error (naming the field).\n"
                   "template <class Message>\nbool Read(const Json& v, Message* out, std::string* error) {\n"
                   "  return Read(v, out, \"\", error);\n}\n")
    if style.writers:
        out.append(_CPP_WRITERS_HEAD)
        for o in order:
            out.append(f"inline Json ToJson(const {name_of[o]}& v);\n")
        out.append("\n")
        for o in order:
            out.append(f"inline Json ToJson(const {name_of[o]}& v) {{\n  Json out = Json::object();\n")
            for f in members[o]:
                key = f.path.rsplit(".", 1)[-1]
                if f.required:
                    out.append(f"  out[\"{key}\"] = ToJson(v.{key});\n")
                else:
                    out.append(f"  if (v.{key}) out[\"{key}\"] = ToJson(*v.{key});\n")
            out.append("  return out;\n}\n\n")
    out.append(f"\n}}  // namespace {style.namespace}\n\n#endif  // {guard}\n")
    return "".join(out)


_CPP_WRITERS_HEAD = r'''
// Writers: the JSON of each struct (a member left unset is left out), for the library's writer to dump.
inline Json ToJson(int64_t v) { return Json(v); }
inline Json ToJson(const std::string& v) { return Json(v); }
inline Json ToJson(bool v) { return Json(v); }
inline Json ToJson(const Size& v) { return v.is_int ? Json(v.value) : Json(v.text); }
inline Json ToJson(const Json& v) { return v; }
template <class T>
Json ToJson(const std::optional<T>& v);
template <class T>
Json ToJson(const std::vector<T>& v) {
  Json out = Json::array();
  for (const T& item : v) out.push_back(ToJson(item));
  return out;
}
template <class T>
Json ToJson(const std::optional<T>& v) {
  return v ? ToJson(*v) : Json(nullptr);
}

'''


_CPP_READERS = r'''namespace detail {

inline std::string Join(const std::string& where, const std::string& key) {
  return where.empty() ? key : where + "." + key;
}

inline bool Fail(const std::string& where, const char* expected, std::string* error) {
  *error = "field '" + where + "': expected " + expected;
  return false;
}

}  // namespace detail

inline bool Read(const Json& v, int64_t* out, const std::string& where, std::string* error) {
  if (v.is_number_unsigned() && v.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX)) {
    *out = static_cast<int64_t>(v.get<uint64_t>());
  } else if (v.is_number_integer() && !v.is_number_unsigned()) {
    *out = v.get<int64_t>();
  } else if (v.is_number_float() && std::isfinite(v.get<double>()) && std::floor(v.get<double>()) == v.get<double>() &&
             v.get<double>() >= -9223372036854775808.0 && v.get<double>() < 9223372036854775808.0) {
    *out = static_cast<int64_t>(v.get<double>());  // a reader may have held an integer as a double
  } else {
    return detail::Fail(where, "an integer", error);
  }
  return true;
}

inline bool Read(const Json& v, std::string* out, const std::string& where, std::string* error) {
  if (!v.is_string()) return detail::Fail(where, "a string", error);
  *out = v.get_ref<const std::string&>();
  return true;
}

inline bool Read(const Json& v, bool* out, const std::string& where, std::string* error) {
  if (!v.is_boolean()) return detail::Fail(where, "a boolean", error);
  *out = v.get<bool>();
  return true;
}

inline bool Read(const Json& v, Size* out, const std::string& where, std::string* error) {
  if (v.is_string()) {
    *out = Size{false, 0, v.get_ref<const std::string&>()};
    return true;
  }
  int64_t n = 0;
  if (!Read(v, &n, where, error)) return detail::Fail(where, "a size (an integer or an expression)", error);
  *out = Size{true, n, std::to_string(n)};
  return true;
}

inline bool Read(const Json& v, Json* out, const std::string&, std::string*) {
  *out = v;
  return true;
}

template <class T>
bool Read(const Json& v, std::optional<T>* out, const std::string& where, std::string* error);  // T or null

template <class T>
bool Read(const Json& v, std::vector<T>* out, const std::string& where, std::string* error) {
  if (!v.is_array()) return detail::Fail(where, "a list", error);
  out->clear();
  out->reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    out->emplace_back();
    if (!Read(v[i], &out->back(), where + "[" + std::to_string(i) + "]", error)) return false;
  }
  return true;
}

template <class T>
bool Read(const Json& v, std::optional<T>* out, const std::string& where, std::string* error) {
  if (v.is_null()) {
    out->reset();
    return true;
  }
  out->emplace();
  return Read(v, &**out, where, error);
}

namespace detail {

template <class T>
bool Required(const Json& object, const char* key, T* out, const std::string& where, std::string* error) {
  auto it = object.find(key);
  if (it == object.end()) {
    *error = "field '" + Join(where, key) + "': missing (required)";
    return false;
  }
  return Read(*it, out, Join(where, key), error);
}

template <class T>
bool Optional(const Json& object, const char* key, std::optional<T>* out, const std::string& where,
              std::string* error) {
  auto it = object.find(key);
  if (it == object.end()) {
    out->reset();
    return true;
  }
  out->emplace();
  return Read(*it, &**out, Join(where, key), error);
}

}  // namespace detail

'''


def cpp_reader_header(source: str = "metadata.toml and protocol.toml") -> str:
    """The readers of the field types (integers, strings, sizes, lists, optionals, the required and optional
    members of an object) on nlohmann/json, included by every schema header (cpp_header)."""
    guard = "HIPDNN_EP_" + re.sub(r"[^A-Z0-9]", "_", CPP_READER_HEADER.split("/")[-1].upper())
    return (f"// {PY_BANNER.format(source=source)}\n"
            "// The JSON readers of the schemas' field types (needs nlohmann/json): a reader refuses a value of\n"
            "// another type, naming the field (`inputs[2].dims[0]`).\n"
            f"#ifndef {guard}\n#define {guard}\n\n"
            "#include <cmath>\n#include <cstdint>\n#include <optional>\n#include <string>\n#include <vector>\n\n"
            f"#include <nlohmann/json.hpp>\n\nnamespace {CPP_READER_NAMESPACE} {{\n\n"
            "using Json = nlohmann::json;\n\n"
            "// A size: an int when static, else the expression of a size known at run time.\n"
            "struct Size {\n  bool is_int = false;\n  int64_t value = 0;\n  std::string text;\n};\n\n"
            + _CPP_READERS +
            f"}}  // namespace {CPP_READER_NAMESPACE}\n\n#endif  // {guard}\n")
