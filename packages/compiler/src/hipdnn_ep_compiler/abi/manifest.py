"""Loader of the runtime ABI manifest JSON.

Nothing in the compiler spells a runtime symbol or signature: names, parameter types, struct
layouts and enum values all come from here.  A target ABI (major, minor) restricts which
functions may be called; asking for one outside it raises AbiTargetError naming it.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import AbiTargetError, CompileError

_BUNDLED = "runtime_abi_v1.json"


def bundled_manifest_path() -> Path:
    """Path of the manifest JSON shipped inside this wheel."""
    return Path(str(resources.files(__package__).joinpath(_BUNDLED)))


@dataclass(frozen=True)
class AbiFunction:
    """One runtime function or kernel as the manifest declares it."""

    name: str
    kind: str  # "function" | "kernel"
    returns_llvm: str
    params_llvm: tuple[str, ...]
    since: int
    status: str
    signature: str
    hash: str
    int_attrs: tuple[str, ...] = ()
    float_attrs: tuple[str, ...] = ()
    # Accepted element types (ONNX codes), kernels only: input 0 by op ("default" or an op name of
    # op_enum) and later inputs by index.  No entry: any dtype.
    op_enum: str | None = None
    dtypes: tuple[tuple[str, frozenset[int]], ...] = ()
    input_dtypes: tuple[tuple[int, frozenset[int]], ...] = ()
    # Types accepted only from a later minor than the kernel's: (table key, dtype code, since);
    # the key is "default" or an op for input 0, the input index as text for a later input.
    dtype_since: tuple[tuple[str, int, int], ...] = ()
    # Attributes appended after the kernel (the manifest's int_attrs_added / float_attrs_added): (name, since).
    attr_since: tuple[tuple[str, int], ...] = ()

    def attrs_for(self, kind: str, minor: int) -> tuple[str, ...]:
        """The kernel's `kind` ("int" or "float") attributes a caller targeting ABI minor `minor` passes:
        those appended in a later minor are left out, and the kernel takes their defaults."""
        since = dict(self.attr_since)
        attrs = self.int_attrs if kind == "int" else self.float_attrs
        return tuple(a for a in attrs if since.get(a, self.since) <= minor)

    def input0_dtypes(self, op: str | None = None) -> frozenset[int] | None:
        """Element types input 0 accepts for `op` (None: no rule, any dtype)."""
        table = dict(self.dtypes)
        return table.get(op, table.get("default")) if op is not None else table.get("default")

    def input0_since(self, op: str | None, code: int) -> int:
        """The ABI minor from which input 0 of `op` accepts dtype `code`."""
        key = op if op is not None and op in dict(self.dtypes) else "default"
        return {(k, c): v for k, c, v in self.dtype_since}.get((key, code), self.since)

    def later_input_since(self, index: int, code: int) -> int:
        return {(k, c): v for k, c, v in self.dtype_since}.get((str(index), code), self.since)

    def later_input_dtypes(self) -> dict[int, frozenset[int]]:
        """Element types of the later inputs that have a rule of their own, by index."""
        return dict(self.input_dtypes)


@dataclass(frozen=True)
class StructField:
    name: str
    llvm: str
    offset: int
    size: int


@dataclass(frozen=True)
class AbiStruct:
    name: str
    size: int
    fields: dict[str, StructField]


class RuntimeAbi:
    """The manifest, viewed at one target minor of its major."""

    def __init__(self, data: dict[str, Any], target_minor: int | None = None, source: str = "manifest"):
        try:
            abi = data["abi"]
            self.major: int = int(abi["major"])
            self.minor: int = int(abi["minor"])
            self.prefix: str = abi["prefix"]
            self.soname: str = abi["soname"]
            self.version_nodes: dict[int, str] = {int(k): v for k, v in data["version_nodes"].items()}
            self.program_entry: dict[str, Any] = data["program_entry"]
            # The artifact format the runtime reads ([artifact]); None: a runtime older than the
            # declaration, which reads format 1 and checks no format.
            self.artifact: dict[str, Any] | None = data.get("artifact")
            self.enums: dict[str, dict[str, int]] = {e["name"]: dict(e["values"]) for e in data["enums"]}
            # (enum, value) -> the ABI minor that introduced the value
            self.enum_since: dict[tuple[str, str], int] = {
                (e["name"], k): int(e.get("value_since", {}).get(k, e.get("since", 0)))
                for e in data["enums"] for k in e["values"]}
            dtype_codes = self.enums.get(f"{self.prefix}_dtype", {})

            def codes(names: list[str]) -> frozenset[int]:
                return frozenset(dtype_codes[n] for n in names)
            self.structs: dict[str, AbiStruct] = {
                s["name"]: AbiStruct(
                    s["name"],
                    int(s["size"]),
                    {f["name"]: StructField(f["name"], f["llvm"], int(f["offset"]), int(f["size"]))
                     for f in s["fields"]},
                )
                for s in data["structs"]
            }
            self.functions: dict[str, AbiFunction] = {
                f["name"]: AbiFunction(
                    name=f["name"],
                    kind=f.get("kind", "function"),
                    returns_llvm=f["returns"]["llvm"],
                    params_llvm=tuple(p["llvm"] for p in f["params"]),
                    since=int(f["since"]),
                    status=f.get("status", "active"),
                    signature=f["signature"],
                    hash=f["hash"],
                    int_attrs=tuple(f.get("int_attrs", ())) + tuple(a for a, _ in f.get("int_attrs_added", ())),
                    float_attrs=tuple(f.get("float_attrs", ())) + tuple(a for a, _ in f.get("float_attrs_added", ())),
                    attr_since=tuple((a, int(v)) for a, v in [*f.get("int_attrs_added", ()),
                                                              *f.get("float_attrs_added", ())]),
                    op_enum=f.get("op_enum"),
                    dtypes=tuple((key, codes(names)) for key, names in f.get("dtypes", {}).items()),
                    input_dtypes=tuple((int(i), codes(names)) for i, names in f.get("input_dtypes", {}).items()),
                    dtype_since=tuple((key, dtype_codes[n], int(v)) for key, table in f.get("dtype_since", {}).items()
                                      for n, v in table.items()),
                )
                for f in data["functions"]
            }
        except (KeyError, TypeError, ValueError) as exc:
            raise CompileError(f"{source}: not a valid runtime ABI manifest ({exc!r})") from exc
        self.source = source
        self.target_minor = self.minor if target_minor is None else target_minor
        if not 0 <= self.target_minor <= self.minor:
            raise AbiTargetError(
                f"cannot target runtime ABI {self.major}.{self.target_minor}: "
                f"this compiler's manifest describes ABI {self.major}.0 to {self.major}.{self.minor}"
            )

    def at_minor(self, minor: int) -> RuntimeAbi:
        """The same manifest restricted to functions available at `minor`."""
        clone = object.__new__(RuntimeAbi)
        clone.__dict__.update(self.__dict__)
        if not 0 <= minor <= self.minor:
            raise AbiTargetError(
                f"cannot target runtime ABI {self.major}.{minor}: "
                f"this compiler's manifest describes ABI {self.major}.0 to {self.major}.{self.minor}. Fix: "
                + (f"install a hipdnn-ep-compiler that knows ABI {self.major}.{minor}, or target "
                   f"--abi {self.major}.{self.minor}" if minor > self.minor else f"target --abi {self.major}.0 "
                   f"to {self.major}.{self.minor}")
            )
        clone.target_minor = minor
        return clone

    def function(self, name: str) -> AbiFunction:
        """The function `name`, checked to exist and be callable at the target minor."""
        fn = self.functions.get(name)
        if fn is None:
            known = reference_abi().functions.get(name)
            if known is not None and self.major == reference_abi().major and known.since > self.minor:
                fix = (f"it was introduced in ABI {self.major}.{known.since}. Fix: install "
                       f"hipdnn-ep-runtime>={self.major}.{known.since} and compile against its manifest")
            else:
                fix = (f"a released runtime of ABI {self.major}.{self.minor} has it, so this manifest is not one. "
                       f"Fix: compile against the manifest of a released hipdnn-ep-runtime (omit --manifest to "
                       f"use the bundled one)")
            raise AbiTargetError(
                f"the graph needs runtime function '{name}', which the runtime ABI manifest "
                f"({self.source}, ABI {self.major}.{self.minor}) does not declare: {fix}"
            )
        if fn.since > self.target_minor:
            raise AbiTargetError(
                f"the graph needs runtime function '{name}', introduced in ABI {self.major}.{fn.since}; "
                f"the target ABI is {self.major}.{self.target_minor}. Fix: target ABI {self.major}.{fn.since} "
                f"or newer (--abi {self.major}.{fn.since}, with hipdnn-ep-runtime>={self.major}.{fn.since} installed)"
            )
        known = reference_abi().functions.get(name)
        if known is not None and known.hash != fn.hash:
            raise AbiTargetError(
                f"runtime function '{name}' is '{fn.signature}' in the target manifest ({self.source}, ABI "
                f"{self.major}.{self.minor}), but this compiler calls it as '{known.signature}'"
                + (" (the layout of a struct it passes differs)" if known.signature == fn.signature else "")
                + f": the manifest breaks ABI {self.major} without a major bump. Fix: compile against the "
                f"manifest of a released hipdnn-ep-runtime {self.major}.x (omit --manifest to use the bundled one)"
            )
        return fn

    def enum_value(self, enum: str, key: str) -> int:
        """The value of `key` in `enum`, checked to exist at the target minor."""
        try:
            value = self.enums[enum][key]
        except KeyError:
            raise AbiTargetError(f"the runtime ABI manifest has no value {key} in enum {enum}") from None
        since = self.enum_since.get((enum, key), 0)
        if since > self.target_minor:
            raise AbiTargetError(
                f"the graph needs {key} of {enum}, introduced in runtime ABI {self.major}.{since}; the target ABI "
                f"is {self.major}.{self.target_minor}. Fix: target ABI {self.major}.{since} or newer (with a "
                f"hipdnn-ep-runtime>={self.major}.{since} installed)")
        return value

    def struct(self, name: str) -> AbiStruct:
        try:
            return self.structs[name]
        except KeyError:
            raise AbiTargetError(f"the runtime ABI manifest has no struct {name}") from None

    def name(self, suffix: str) -> str:
        """Full symbol for a suffix (the manifest's prefix + '_' + suffix)."""
        return f"{self.prefix}_{suffix}"

    def functions_available(self) -> list[AbiFunction]:
        """Every function callable at the target minor (what the import stub defines)."""
        return [f for f in self.functions.values() if f.since <= self.target_minor]


def load_abi(path: str | Path | None = None, target: str | tuple[int, int] | None = None) -> RuntimeAbi:
    """Load a manifest (the bundled one by default), restricted to `target` ("1.0" or (1, 0))."""
    p = Path(path) if path is not None else bundled_manifest_path()
    try:
        data = json.loads(p.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise CompileError(f"cannot read runtime ABI manifest {p}: {exc}") from exc
    abi = RuntimeAbi(data, source=p.name)
    if path is not None:
        _check_major(abi)
    if target is None:
        return abi
    major, minor = parse_abi_version(target)
    if major != abi.major:
        raise AbiTargetError(
            f"cannot target runtime ABI {major}.{minor}: this compiler supports ABI major {abi.major} "
            f"(minors 0 to {abi.minor}). Fix: install a hipdnn-ep-compiler for runtime ABI major {major}, "
            f"or target --abi {abi.major}.{abi.minor}"
        )
    return abi.at_minor(minor)


@functools.cache
def reference_abi() -> RuntimeAbi:
    """The bundled manifest: the ABI this compiler's code generator calls (signatures it emits)."""
    return load_abi()


def _check_major(abi: RuntimeAbi) -> None:
    """A manifest of another ABI major is refused, naming the functions whose signatures changed."""
    ref = reference_abi()
    if abi.major == ref.major:
        return
    changed = [f"{name} ('{fn.signature}'; this compiler calls '{ref.functions[name].signature}')"
               for name, fn in abi.functions.items()
               if name in ref.functions and fn.hash != ref.functions[name].hash]
    removed = sorted(set(ref.functions) - set(abi.functions))
    details = ""
    if changed:
        details += f"; it changed {len(changed)} function(s) this compiler calls: " + ", ".join(changed)
    if removed:
        details += f"; it removed {', '.join(removed)}"
    raise AbiTargetError(
        f"cannot compile for runtime ABI {abi.major}.{abi.minor} ({abi.source}): this compiler emits code for "
        f"runtime ABI major {ref.major} (1.0 to {ref.major}.{ref.minor}){details}. Fix: install a "
        f"hipdnn-ep-compiler that supports runtime ABI major {abi.major}, or a hipdnn-ep-runtime {ref.major}.x"
    )


def parse_abi_version(target: str | tuple[int, int]) -> tuple[int, int]:
    if isinstance(target, tuple):
        return int(target[0]), int(target[1])
    parts = str(target).split(".")
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise AbiTargetError(f"ABI version must be MAJOR.MINOR (e.g. 1.0), got '{target}'")
    return int(parts[0]), int(parts[1])
