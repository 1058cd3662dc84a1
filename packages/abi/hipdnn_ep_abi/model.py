"""The ABI manifest as data: parsing, C type layout and signature hashes.

Everything here is derived from manifest.toml; nothing is declared twice.
The layout rules are those of the LP64 C ABI (x86-64 and aarch64 Linux),
the only targets the runtime supports.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from ._toml import loads as load_toml

# Scalar C types: (size, LLVM type).
SCALARS: dict[str, tuple[int, str]] = {
    "int8_t": (1, "i8"),
    "uint8_t": (1, "i8"),
    "int32_t": (4, "i32"),
    "uint32_t": (4, "i32"),
    "int64_t": (8, "i64"),
    "uint64_t": (8, "i64"),
    "float": (4, "f32"),
    "double": (8, "f64"),
}
POINTER_SIZE = 8
KERNEL_PARAMS = ("hipdnn_ep_state_t* state", "const hipdnn_ep_kernel_args_t* args")
KERNEL_RETURNS = "int32_t"
DTYPE_ENUM = "dtype"  # suffix of the enum that names element types
DEFAULT_KEY = "default"  # the dtypes entry for ops without one of their own
# How a function bounds its writes through a pointer to a struct that grows (see `writes`):
CALLER_STRUCT_SIZE = "caller_struct_size"  # reads the caller's struct_size, writes only what it covers
ALL_FIELDS = "all_fields"  # writes every field of the struct the runtime was built with (sizeof)
_FIELDS_OF_RE = re.compile(r"^fields_of_(?P<major>\d+)\.(?P<minor>\d+)$")  # the fields of ABI MAJOR.MINOR

_PARAM_RE = re.compile(r"^(?P<type>.+?)\s*(?P<name>[A-Za-z_][A-Za-z0-9_]*)$")


class ManifestError(ValueError):
    """The manifest is malformed (a type it does not know, a duplicate name...)."""


@dataclass(frozen=True)
class CType:
    """A normalized C type: `const char*`, `hipdnn_ep_state_t**`, `uint64_t`."""

    base: str
    const: bool = False
    pointers: int = 0

    @classmethod
    def parse(cls, text: str) -> CType:
        t = text.strip()
        pointers = t.count("*")
        t = t.replace("*", " ").split()
        const = "const" in t
        words = [w for w in t if w != "const"]
        if len(words) != 1:
            raise ManifestError(f"cannot parse C type {text!r}")
        return cls(words[0], const, pointers)

    def __str__(self) -> str:
        return ("const " if self.const else "") + self.base + "*" * self.pointers

    @property
    def is_pointer(self) -> bool:
        return self.pointers > 0

    def llvm(self) -> str:
        if self.is_pointer:
            return "ptr"
        if self.base == "void":
            return "void"
        return SCALARS[self.base][1]


@dataclass(frozen=True)
class Param:
    type: CType
    name: str

    @classmethod
    def parse(cls, text: str) -> Param:
        m = _PARAM_RE.match(text.strip())
        if not m:
            raise ManifestError(f"cannot parse parameter {text!r}")
        return cls(CType.parse(m["type"]), m["name"])

    def decl(self) -> str:
        return f"{self.type} {self.name}"


@dataclass(frozen=True)
class Field:
    param: Param
    since: int
    offset: int
    size: int


@dataclass(frozen=True)
class Struct:
    name: str
    doc: str
    since: int
    fields: tuple[Field, ...]
    size: int
    align: int

    @property
    def versioned(self) -> bool:
        """Structs led by struct_size may grow by appending fields within a major."""
        return bool(self.fields) and self.fields[0].param.name == "struct_size"

    @property
    def tag(self) -> str:
        return self.name.removesuffix("_t")


@dataclass(frozen=True)
class Enum:
    name: str
    doc: str
    since: int
    values: tuple[tuple[str, int], ...]
    # Values added after the enum itself: (name, ABI minor that introduced it).
    value_since: tuple[tuple[str, int], ...] = ()
    # Bytes per element of each value (the dtype enum only): (name, bytes).
    element_bytes: tuple[tuple[str, int], ...] = ()

    def since_of(self, value: str) -> int:
        """The ABI minor that introduced `value` (the enum's own since unless the value says)."""
        return dict(self.value_since).get(value, self.since)

    @property
    def macro_prefix(self) -> str:
        return self.name.upper() + "_"


@dataclass(frozen=True)
class Handle:
    name: str
    doc: str
    since: int


@dataclass(frozen=True)
class Function:
    name: str
    kind: str  # "function" | "kernel"
    returns: CType
    params: tuple[Param, ...]
    since: int
    status: str
    callers: tuple[str, ...]
    doc: str
    int_attrs: tuple[str, ...] = ()
    float_attrs: tuple[str, ...] = ()
    # Accepted element types (kernels only; see manifest.toml): `dtypes` rules input 0,
    # keyed by DEFAULT_KEY or an op of `op_enum`; `input_dtypes` rules later inputs by index.
    # Names of hipdnn_ep_dtype, in code order. Neither is part of the signature hash.
    op_enum: str | None = None
    dtypes: tuple[tuple[str, tuple[str, ...]], ...] = ()
    input_dtypes: tuple[tuple[int, tuple[str, ...]], ...] = ()
    # Element types added after the kernel: (table key, dtype, since); the key is "default" or an
    # op for input 0, the input index as text for a later input. Absent: the kernel's since.
    dtype_since: tuple[tuple[str, str, int], ...] = ()
    # Attributes appended after the kernel: (name, since), int and float alike (names are unique per
    # kernel). A reader of an older minor passes only the attributes it knows (the manifest's JSON
    # keeps them apart); the kernel takes an appended one's default when a caller passes fewer.
    attr_since: tuple[tuple[str, int], ...] = ()
    # How the function bounds its writes through each non-const pointer to a struct that grows
    # (`writes` in the manifest): (parameter, bound). Not part of the signature hash; a snapshot
    # released before bounds were declared has none (nothing is claimed for it).
    writes: tuple[tuple[str, str], ...] = ()

    @property
    def signature(self) -> str:
        types = ", ".join(str(p.type) for p in self.params)
        return f"{self.returns} {self.name}({types})"

    def prototype(self) -> str:
        params = ", ".join(p.decl() for p in self.params) or "void"
        return f"{self.returns} {self.name}({params})"


@dataclass(frozen=True)
class ArtifactFormat:
    """The [artifact] table: file name, metadata section and metadata format versions."""

    file: str
    section: str
    format: int
    oldest_format: int


@dataclass
class Manifest:
    major: int
    minor: int
    prefix: str
    soname: str
    program_entry: Function | None
    enums: list[Enum] = field(default_factory=list)
    structs: list[Struct] = field(default_factory=list)
    handles: list[Handle] = field(default_factory=list)
    functions: list[Function] = field(default_factory=list)
    artifact: ArtifactFormat | None = None
    # Function types the host implements and hands the runtime (a struct field `NAME* field`).
    callbacks: list[Function] = field(default_factory=list)

    # -- lookups ---------------------------------------------------------
    def struct(self, name: str) -> Struct | None:
        return next((s for s in self.structs if s.name == name), None)

    def function(self, name: str) -> Function | None:
        return next((f for f in self.functions if f.name == name), None)

    def callback(self, name: str) -> Function | None:
        return next((c for c in self.callbacks if c.name == name), None)

    def enum(self, name: str) -> Enum | None:
        return next((e for e in self.enums if e.name == name), None)

    def kernels(self) -> list[Function]:
        return [f for f in self.functions if f.kind == "kernel"]

    # -- writes through struct pointers ------------------------------------
    def written_structs(self, fn: Function) -> list[tuple[Param, Struct]]:
        """The parameters through which `fn` may write a struct that grows within a major: a
        non-const single pointer to a struct led by struct_size. A caller built for an older minor
        passes such a struct without the fields appended since, so each needs a write bound."""
        out = []
        for p in fn.params:
            s = self.struct(p.type.base)
            if s is not None and s.versioned and p.type.pointers == 1 and not p.type.const:
                out.append((p, s))
        return out

    def fields_written(self, fn: Function, struct: Struct, bound: str) -> tuple[Field, ...] | None:
        """The fields `fn` writes under `bound` (None: only those the caller's struct_size covers)."""
        if bound == CALLER_STRUCT_SIZE:
            return None
        if bound == ALL_FIELDS:
            return struct.fields
        m = _FIELDS_OF_RE.match(bound)
        assert m is not None, bound  # parse() accepts nothing else
        return tuple(f for f in struct.fields if f.since <= int(m["minor"]))

    @staticmethod
    def layout_size(fields: tuple[Field, ...]) -> int:
        """Bytes from the struct's start to the end of the last of `fields`."""
        return max((f.offset + f.size for f in fields), default=0)

    # -- element types ---------------------------------------------------
    @property
    def dtype_enum(self) -> Enum:
        e = self.enum(f"{self.prefix}_{DTYPE_ENUM}")
        if e is None:
            raise ManifestError(f"enum {self.prefix}_{DTYPE_ENUM} is missing")
        return e

    def all_dtypes(self) -> tuple[str, ...]:
        return tuple(name for name, _ in sorted(self.dtype_enum.values, key=lambda kv: kv[1]))

    def ops(self, fn: Function) -> tuple[str, ...]:
        """The ops a kernel's `op` attribute may name (empty for a kernel without one)."""
        e = self.enum(fn.op_enum) if fn.op_enum else None
        return tuple(name for name, _ in e.values) if e else ()

    def input0_dtypes(self, fn: Function) -> dict[str | None, tuple[str, ...]]:
        """Element types input 0 accepts, per op (key None for a kernel without ops);
        every dtype where the kernel declares no rule."""
        table = dict(fn.dtypes)
        default = table.get(DEFAULT_KEY, self.all_dtypes())
        if not fn.op_enum:
            return {None: default}
        return {op: table.get(op, default) for op in self.ops(fn)}

    def later_input_dtypes(self, fn: Function) -> dict[int, tuple[str, ...]]:
        """Element types of the later inputs that have a rule of their own, by index."""
        return dict(fn.input_dtypes)

    def input0_since(self, fn: Function, op: str | None, dtype: str) -> int:
        """The ABI minor from which input 0 of `op` accepts `dtype` (its table's entry, else the kernel's)."""
        key = op if op is not None and op in dict(fn.dtypes) else DEFAULT_KEY
        return {(k, d): v for k, d, v in fn.dtype_since}.get((key, dtype), fn.since)

    def later_input_since(self, fn: Function, index: int, dtype: str) -> int:
        return {(k, d): v for k, d, v in fn.dtype_since}.get((str(index), dtype), fn.since)

    @staticmethod
    def attr_since_of(fn: Function, attr: str) -> int:
        """The ABI minor from which the kernel takes attribute `attr` (appended ones: their own)."""
        return dict(fn.attr_since).get(attr, fn.since)

    def version_node(self, minor: int) -> str:
        return f"{self.prefix.upper()}_{self.major}.{minor}"

    # -- hashes ----------------------------------------------------------
    def frozen_layout(self, struct: Struct, as_of_minor: int) -> str:
        """The layout a caller compiled at `as_of_minor` relies on.

        Appending a field to a struct_size-led struct does not change it, so
        an appended field never invalidates artifacts built before it.
        """
        fields = struct.fields
        if struct.versioned:
            fields = tuple(f for f in fields if f.since <= as_of_minor)
        body = ";".join(f"{f.param.type} {f.param.name}@{f.offset}" for f in fields)
        # a callback field's layout is its function type: changing that type changes the hash
        callbacks = "".join(f"{{{c.signature}}}" for f in fields if (c := self.callback(f.param.type.base)))
        nested = [
            self.frozen_layout(s, as_of_minor)
            for f in fields
            if (s := self.struct(f.param.type.base)) is not None and s.name != struct.name
        ]
        return "{" + struct.name + ":" + body + "}" + callbacks + "".join(nested)

    def signature_hash(self, fn: Function) -> str:
        """16 hex digits of sha256 over the C signature and the frozen layout
        of every struct it passes: any change a caller would miscompile changes it."""
        parts = [fn.signature]
        for t in [fn.returns, *(p.type for p in fn.params)]:
            s = self.struct(t.base)
            if s is not None:
                parts.append(self.frozen_layout(s, fn.since))
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


# ---------------------------------------------------------------- parsing

def _layout(manifest_structs: dict[str, Struct], name: str, raw_fields: list) -> tuple[tuple[Field, ...], int, int]:
    offset, align_max, out = 0, 1, []
    for text, since in raw_fields:
        p = Param.parse(text)
        if p.type.is_pointer:
            size = align = POINTER_SIZE
        elif p.type.base in SCALARS:
            size = align = SCALARS[p.type.base][0]
        elif p.type.base in manifest_structs:
            inner = manifest_structs[p.type.base]
            size, align = inner.size, inner.align
        else:
            raise ManifestError(f"struct {name}: field {p.name} has unknown type {p.type}")
        offset = (offset + align - 1) // align * align
        out.append(Field(p, int(since), offset, size))
        offset += size
        align_max = max(align_max, align)
    size = (offset + align_max - 1) // align_max * align_max
    return tuple(out), size, align_max


def _split_since(kernel: str, where: str, entries: object) -> tuple[object, dict[str, int]]:
    """Entries are a dtype name, or [name, since] for a type added after the kernel."""
    if not isinstance(entries, list):
        return entries, {}
    names, since = [], {}
    for e in entries:
        if isinstance(e, list):
            if len(e) != 2 or not isinstance(e[0], str) or not isinstance(e[1], int):
                raise ManifestError(f"kernel {kernel}: {where}: {e!r} must be a dtype name or [name, since]")
            since[e[0]] = e[1]
            e = e[0]
        names.append(e)
    return names, since


def _split_attrs(kernel: str, where: str, entries: object) -> tuple[tuple[str, ...], tuple[tuple[str, int], ...]]:
    """Attribute entries are a name, or [name, since] for one appended after the kernel; appended ones
    come last (positions are the ABI), in order of since."""
    if not isinstance(entries, list):
        raise ManifestError(f"kernel {kernel}: {where} must be a list")
    names, since = [], []
    for e in entries:
        if isinstance(e, list):
            if len(e) != 2 or not isinstance(e[0], str) or not isinstance(e[1], int):
                raise ManifestError(f"kernel {kernel}: {where}: {e!r} must be a name or [name, since]")
            since.append((e[0], e[1]))
            e = e[0]
        elif not isinstance(e, str):
            raise ManifestError(f"kernel {kernel}: {where}: {e!r} must be a name or [name, since]")
        elif since:
            raise ManifestError(f"kernel {kernel}: {where}: {e} follows an attribute appended later; "
                                f"appended attributes come last")
        names.append(e)
    if [v for _, v in since] != sorted(v for _, v in since):
        raise ManifestError(f"kernel {kernel}: {where}: appended attributes must be in order of since")
    return tuple(names), tuple(since)


def _dtype_list(kernel: str, where: str, names: object, order: dict[str, int]) -> tuple[str, ...]:
    """A kernel's list of dtype names, checked and put in code order."""
    if not isinstance(names, list) or not names:
        raise ManifestError(f"kernel {kernel}: {where} must be a non-empty list of dtype names")
    unknown = [n for n in names if n not in order]
    if unknown:
        raise ManifestError(f"kernel {kernel}: {where} names unknown dtype(s) {unknown} "
                            f"(known: {', '.join(order)})")
    if len(set(names)) != len(names):
        raise ManifestError(f"kernel {kernel}: {where} lists a dtype twice")
    return tuple(sorted(names, key=order.__getitem__))


def _input_index(kernel: str, key: str) -> int:
    if not key.isdigit() or int(key) < 1:
        raise ManifestError(f"kernel {kernel}: input_dtypes.{key}: the key must be an input index >= 1 "
                            f"(input 0 is ruled by dtypes)")
    return int(key)


def _check_type(t: CType, known: set[str], where: str) -> None:
    if t.base == "void" or t.base in SCALARS or t.base in known or t.base == "char":
        return
    raise ManifestError(f"{where}: unknown type {t}")


def parse(text: str) -> Manifest:
    raw = load_toml(text)
    abi = raw["abi"]
    structs: dict[str, Struct] = {}
    for s in raw.get("structs", []):
        fields, size, align = _layout(structs, s["name"], s["fields"])
        structs[s["name"]] = Struct(s["name"], s.get("doc", ""), int(s["since"]), fields, size, align)
    handles = [Handle(h["name"], h.get("doc", ""), int(h["since"])) for h in raw.get("handles", [])]
    enums = []
    for e in raw.get("enums", []):
        if any(len(v) not in (2, 3) for v in e["values"]):
            raise ManifestError(f"enum {e['name']}: each value is [NAME, value] or [NAME, value, since]")
        sizes = e.get("element_bytes", {})
        names = [str(v[0]) for v in e["values"]]
        if sizes and (sorted(sizes) != sorted(names) or any(b not in (1, 2, 4, 8) for b in sizes.values())):
            raise ManifestError(f"enum {e['name']}: element_bytes must give 1, 2, 4 or 8 bytes for exactly its "
                                f"values {names}, got {sizes}")
        enums.append(Enum(e["name"], e.get("doc", ""), int(e["since"]),
                          tuple((str(v[0]), int(v[1])) for v in e["values"]),
                          tuple((str(v[0]), int(v[2])) for v in e["values"] if len(v) == 3),
                          tuple((n, int(sizes[n])) for n in names) if sizes else ()))
    callbacks = [Function(
        name=c["name"], kind="callback", returns=CType.parse(c["returns"]),
        params=tuple(Param.parse(p) for p in c["params"]), since=int(c["since"]),
        status="active", callers=("host",), doc=c.get("doc", ""),
    ) for c in raw.get("callbacks", [])]
    known = set(structs) | {h.name for h in handles} | {c.name for c in callbacks}

    functions: list[Function] = []
    for f in raw.get("functions", []):
        writes = f.get("writes", {})
        if not isinstance(writes, dict) or not all(isinstance(v, str) for v in writes.values()):
            raise ManifestError(f"function {f['name']}: writes must be a table {{ PARAM = \"BOUND\" }}, got {writes!r}")
        functions.append(Function(
            name=f["name"], kind="function", returns=CType.parse(f["returns"]),
            params=tuple(Param.parse(p) for p in f["params"]), since=int(f["since"]),
            status=f.get("status", "active"), callers=tuple(f["callers"]), doc=f.get("doc", ""),
            writes=tuple((str(k), v) for k, v in writes.items()),
        ))
    dtype_order = {name: code for e in enums if e.name == f"{abi['prefix']}_{DTYPE_ENUM}" for name, code in e.values}
    for k in raw.get("kernels", []):
        dtypes, input_dtypes, dtype_since = {}, {}, []
        for key, entries in k.get("dtypes", {}).items():
            dtypes[str(key)], since = _split_since(k["name"], f"dtypes.{key}", entries)
            dtype_since += [(str(key), d, v) for d, v in since.items()]
        for key, entries in k.get("input_dtypes", {}).items():
            input_dtypes[str(key)], since = _split_since(k["name"], f"input_dtypes.{key}", entries)
            dtype_since += [(str(key), d, v) for d, v in since.items()]
        int_attrs, int_since = _split_attrs(k["name"], "int_attrs", k.get("int_attrs", []))
        float_attrs, float_since = _split_attrs(k["name"], "float_attrs", k.get("float_attrs", []))
        functions.append(Function(
            name=k["name"], kind="kernel", returns=CType.parse(KERNEL_RETURNS),
            params=tuple(Param.parse(p) for p in KERNEL_PARAMS), since=int(k["since"]),
            status=k.get("status", "active"), callers=("artifact",), doc=k.get("doc", ""),
            int_attrs=int_attrs, float_attrs=float_attrs, attr_since=int_since + float_since,
            op_enum=k.get("op_enum"),
            dtypes=tuple((str(key), _dtype_list(k["name"], f"dtypes.{key}", names, dtype_order))
                         for key, names in dtypes.items()),
            input_dtypes=tuple(sorted((_input_index(k["name"], key),
                                       _dtype_list(k["name"], f"input_dtypes.{key}", names, dtype_order))
                                      for key, names in input_dtypes.items())),
            dtype_since=tuple(dtype_since),
        ))
    entry = None
    if "program" in raw:
        pr = raw["program"]
        entry = Function(
            name=pr["name"], kind="program", returns=CType.parse(pr["returns"]),
            params=tuple(Param.parse(p) for p in pr["params"]), since=int(pr["since"]),
            status="active", callers=("host",), doc="Entry point every artifact exports.",
        )

    artifact = None
    if "artifact" in raw:
        a = raw["artifact"]
        artifact = ArtifactFormat(str(a["file"]), str(a["section"]), int(a["format"]), int(a["oldest_format"]))
        if not 1 <= artifact.oldest_format <= artifact.format:
            raise ManifestError(f"[artifact]: need 1 <= oldest_format <= format, got {artifact.oldest_format} "
                                f"and {artifact.format}")
        if "/" in artifact.file or not artifact.file.endswith(".so") or not artifact.section.startswith("."):
            raise ManifestError(f"[artifact]: file must be a plain *.so name and section start with '.', got "
                                f"{artifact.file!r} and {artifact.section!r}")
    m = Manifest(int(abi["major"]), int(abi["minor"]), abi["prefix"], abi["soname"], entry,
                 enums, list(structs.values()), handles, functions, artifact, callbacks)
    _validate(m, known)
    return m


def _validate(m: Manifest, known: set[str]) -> None:
    seen: set[str] = set()
    for fn in [*m.functions, *([m.program_entry] if m.program_entry else [])]:
        if fn.name in seen:
            raise ManifestError(f"function {fn.name} declared twice")
        seen.add(fn.name)
        if not fn.name.startswith(m.prefix + "_"):
            raise ManifestError(f"function {fn.name} lacks the prefix {m.prefix}_")
        if fn.status not in ("active", "deprecated"):
            raise ManifestError(f"function {fn.name}: status must be active or deprecated, not {fn.status!r}")
        if fn.since > m.minor:
            raise ManifestError(f"function {fn.name}: since {fn.since} is newer than the ABI minor {m.minor}")
        if not set(fn.callers) <= {"host", "artifact"}:
            raise ManifestError(f"function {fn.name}: callers must be host and/or artifact")
        for t in [fn.returns, *(p.type for p in fn.params)]:
            _check_type(t, known, f"function {fn.name}")
    for cb in m.callbacks:
        if not cb.name.startswith(m.prefix + "_") or not cb.name.endswith("_fn"):
            raise ManifestError(f"callback {cb.name}: the name needs the prefix {m.prefix}_ and the suffix _fn")
        for t in [cb.returns, *(p.type for p in cb.params)]:
            _check_type(t, known, f"callback {cb.name}")
    for s in m.structs:
        for f in s.fields:
            if f.param.type.base.endswith("_fn") and f.param.type.base.startswith(m.prefix + "_"):
                if m.callback(f.param.type.base) is None or f.param.type.pointers != 1:
                    raise ManifestError(f"struct {s.name}: field {f.param.name} needs a declared callback "
                                        f"as `NAME_fn* {f.param.name}`")
    for group in (m.structs, m.enums, m.handles, m.callbacks):
        for item in group:
            if item.since > m.minor:
                raise ManifestError(f"{item.name}: since {item.since} is newer than the ABI minor {m.minor}")
    for e in m.enums:
        for value, since in e.value_since:
            if not e.since <= since <= m.minor:
                raise ManifestError(f"enum {e.name}: value {value} has since {since}, outside "
                                    f"{e.since} (the enum's) to {m.minor} (the ABI minor)")
    for fn in m.kernels():
        for key, dtype, since in fn.dtype_since:
            if not fn.since <= since <= m.minor:
                raise ManifestError(f"kernel {fn.name}: {key} {dtype} has since {since}, outside "
                                    f"{fn.since} (the kernel's) to {m.minor} (the ABI minor)")
        for attr, since in fn.attr_since:
            if not fn.since < since <= m.minor:
                raise ManifestError(f"kernel {fn.name}: attribute {attr} has since {since}, outside "
                                    f"{fn.since + 1} (after the kernel's) to {m.minor} (the ABI minor)")
        if len(set(fn.int_attrs + fn.float_attrs)) != len(fn.int_attrs) + len(fn.float_attrs):
            raise ManifestError(f"kernel {fn.name}: an attribute name is listed twice")
    for s in m.structs:
        if s.versioned and any(f.since < s.since for f in s.fields):
            raise ManifestError(f"struct {s.name}: a field predates the struct")
    for fn in m.kernels():
        _validate_kernel_dtypes(m, fn)
    for fn in m.functions:
        _validate_writes(m, fn)


def _validate_writes(m: Manifest, fn: Function) -> None:
    """Each `writes` entry names a pointer to a struct that grows and a bound parse() knows."""
    written = {p.name: s for p, s in m.written_structs(fn)}
    for param, bound in fn.writes:
        if param not in written:
            raise ManifestError(f"function {fn.name}: writes.{param} must name a parameter that is a non-const "
                                f"pointer to a struct led by struct_size (here: {', '.join(written) or 'none'})")
        fm = _FIELDS_OF_RE.match(bound)
        if bound not in (CALLER_STRUCT_SIZE, ALL_FIELDS) and fm is None:
            raise ManifestError(f"function {fn.name}: writes.{param} = {bound!r}: the bound must be "
                                f"\"{CALLER_STRUCT_SIZE}\", \"{ALL_FIELDS}\" or \"fields_of_{m.major}.N\"")
        if fm is not None and (int(fm["major"]) != m.major or int(fm["minor"]) > m.minor):
            raise ManifestError(f"function {fn.name}: writes.{param} = {bound!r} names an ABI other than "
                                f"{m.major}.0 to {m.major}.{m.minor}")


def _validate_kernel_dtypes(m: Manifest, fn: Function) -> None:
    if fn.op_enum is not None:
        if "op" not in fn.int_attrs:
            raise ManifestError(f"kernel {fn.name}: op_enum needs an int attribute named op")
        if m.enum(fn.op_enum) is None:
            raise ManifestError(f"kernel {fn.name}: op_enum {fn.op_enum} is not a declared enum")
    if not fn.dtypes:
        return
    keys = [key for key, _ in fn.dtypes]
    ops = m.ops(fn)
    for key in keys:
        if key != DEFAULT_KEY and key not in ops:
            what = f"an op of {fn.op_enum}" if fn.op_enum else "an op (the kernel has no op_enum)"
            raise ManifestError(f"kernel {fn.name}: dtypes.{key} is neither {DEFAULT_KEY} nor {what}")
    if DEFAULT_KEY not in keys and (not ops or set(keys) != set(ops)):
        raise ManifestError(f"kernel {fn.name}: dtypes needs a {DEFAULT_KEY} entry for the ops it does not list")


def load(path: str | Path) -> Manifest:
    return parse(Path(path).read_text())


DEFAULT_MANIFEST = Path(__file__).resolve().parent.parent / "manifest.toml"
