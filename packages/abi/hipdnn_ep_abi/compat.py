"""Bump rules: compare the manifest with the last released one.

Within one ABI major, an artifact built against any earlier minor must keep
loading and calling correctly. So, between the released manifest `old` and the
candidate `new` of the same major:
  * no function, handle, struct, struct field or enum value may disappear;
  * no signature hash (which covers the C types and the frozen layout of the
    structs passed) may change;
  * anything added needs `new.minor > old.minor` and must say `since` > old.minor;
  * struct fields may only be appended, and only to struct_size-led structs;
  * the element types a kernel accepts (per op and per input) may only grow,
    and a type added needs a minor bump: artifacts built for the old minor may
    pass any type it accepted, and a compiler may emit a type once the manifest lists it;
  * the artifact format ([artifact]) keeps its file and section names, its metadata
    `format` only grows and `oldest_format` never does (artifacts of every format
    a released minor read keep loading). A manifest released before [artifact]
    existed read format 1 only.
A change that breaks any of these needs `new.major > old.major`.

Whatever the versions, a function that writes through a non-const pointer to a
struct led by struct_size must declare how it bounds those writes (`writes`), and
the bound must stay inside the struct its oldest caller passes: a caller built
for the function's own minor passes the fields of that minor and nothing after
them (see `write_bound_violations`).
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import CALLER_STRUCT_SIZE, Function, Manifest


@dataclass(frozen=True)
class Violation:
    name: str  # the function, struct or enum it concerns
    message: str

    def __str__(self) -> str:
        return f"{self.name}: {self.message}"


def check(old: Manifest, new: Manifest) -> list[Violation]:
    """Every bump-rule violation of `new` against the released `old`."""
    if (new.major, new.minor) < (old.major, old.minor):
        return [Violation("abi", f"version went backwards: {old.major}.{old.minor} -> {new.major}.{new.minor}")]
    if new.major > old.major:
        return write_bound_violations(new)  # a new major may break anything but its own callers
    out: list[Violation] = write_bound_violations(new)
    bumped = new.minor > old.minor
    need_major = f"bump the ABI major ({old.major} -> {old.major + 1}), or keep the old form"
    need_minor = f"bump the ABI minor ({old.major}.{old.minor} -> {old.major}.{old.minor + 1})"

    def added(name: str, since: int, what: str) -> None:
        if not bumped:
            out.append(Violation(name, f"{what} added without a minor bump: {need_minor}"))
        elif since <= old.minor:
            out.append(Violation(name, f"{what} added with since = {since}, but {old.major}.{since} was already "
                                       f"released without it: set since = {new.minor}"))

    # functions and the program entry
    old_entry = [old.program_entry] if old.program_entry else []
    for fo in [*old.functions, *old_entry]:
        fn = new.program_entry if fo.kind == "program" else new.function(fo.name)
        if fn is None:
            out.append(Violation(fo.name, f"removed, but {old.major}.{old.minor} exports it and artifacts built "
                                          f"for it import it: {need_major} (or mark it deprecated)"))
            continue
        if old.signature_hash(fo) != new.signature_hash(fn):
            change = (f"signature changed from '{fo.signature}' to '{fn.signature}'"
                      if fo.signature != fn.signature else "the layout of a struct it takes changed")
            out.append(Violation(fo.name, f"{change}: artifacts built for {old.major}.{old.minor} would call it "
                                          f"wrongly and still link: {need_major}"))
        if fn.since != fo.since:
            out.append(Violation(fo.name, f"since changed from {fo.since} to {fn.since}: history is immutable"))
        if fn.int_attrs[:len(fo.int_attrs)] != fo.int_attrs or fn.float_attrs[:len(fo.float_attrs)] != fo.float_attrs:
            out.append(Violation(fo.name, f"kernel attributes reordered or removed: {need_major}"))
        elif fo.kind == "kernel":
            out += _appended_attrs(old, fo, new, fn)
        if fo.kind == "kernel":
            for where, old_types, new_types, old_since, new_since in _dtype_rules(old, fo, new, fn):
                for dtype in sorted(set(old_types) - set(new_types)):
                    out.append(Violation(fo.name, f"{where} no longer accepts {dtype}, but artifacts built for "
                                                  f"{old.major}.{old.minor} may pass it: {need_major}"))
                gained = sorted(set(new_types) - set(old_types))
                if gained and not bumped:
                    out.append(Violation(fo.name, f"{where} accepts {', '.join(gained)}, added without a minor "
                                                  f"bump: {need_minor}"))
                for dtype in gained if bumped else ():
                    if new_since(dtype) <= old.minor:
                        out.append(Violation(fo.name, f"{where} accepts {dtype} since {old.major}."
                                                      f"{new_since(dtype)}, but {old.major}.{old.minor} was "
                                                      f"released without it: artifacts using it would claim a "
                                                      f"runtime that rejects it. Write it as [\"{dtype}\", "
                                                      f"{new.minor}]"))
                for dtype in sorted(set(old_types) & set(new_types)):
                    if old_since(dtype) != new_since(dtype):
                        out.append(Violation(fo.name, f"{where}: the since of {dtype} changed from "
                                                      f"{old_since(dtype)} to {new_since(dtype)}: history is "
                                                      f"immutable"))
    for fn in new.functions:
        if old.function(fn.name) is None:
            added(fn.name, fn.since, "function")
    if new.program_entry and not old.program_entry:
        added(new.program_entry.name, new.program_entry.since, "program entry")

    # structs
    for so in old.structs:
        sn = new.struct(so.name)
        if sn is None:
            out.append(Violation(so.name, f"struct removed: {need_major}"))
            continue
        common = min(len(so.fields), len(sn.fields))
        for fo_, fn_ in zip(so.fields[:common], sn.fields[:common], strict=True):
            if (fo_.param, fo_.offset, fo_.since) != (fn_.param, fn_.offset, fn_.since):
                out.append(Violation(so.name, f"field '{fo_.param.decl()}' changed to '{fn_.param.decl()}': "
                                              f"{need_major}"))
        if len(sn.fields) < len(so.fields):
            out.append(Violation(so.name, f"fields removed: {need_major}"))
        for f in sn.fields[len(so.fields):]:
            if not sn.versioned:
                out.append(Violation(so.name, f"field '{f.param.decl()}' appended to a struct without "
                                              f"struct_size (its layout is frozen within a major): {need_major}"))
            else:
                added(so.name, f.since, f"field '{f.param.decl()}'")
    for s in new.structs:
        if old.struct(s.name) is None:
            added(s.name, s.since, "struct")

    # enums and handles
    old_enums = {e.name: e for e in old.enums}
    new_enums = {e.name: e for e in new.enums}
    for name, eo in old_enums.items():
        en = new_enums.get(name)
        if en is None:
            out.append(Violation(name, f"enum removed: {need_major}"))
            continue
        ov, nv = dict(eo.values), dict(en.values)
        ob, nb = dict(eo.element_bytes), dict(en.element_bytes)
        for k, v in ov.items():
            if nv.get(k) != v:
                out.append(Violation(name, f"value {k} = {v} changed or removed: {need_major}"))
            elif k in ob and nb.get(k) != ob[k]:
                out.append(Violation(name, f"element_bytes of {k} changed from {ob[k]} to {nb.get(k)}: {need_major}"))
            elif eo.since_of(k) != en.since_of(k):
                out.append(Violation(name, f"the since of value {k} changed from {eo.since_of(k)} to "
                                           f"{en.since_of(k)}: history is immutable"))
        if set(nv) - set(ov) and not bumped:
            out.append(Violation(name, f"values {sorted(set(nv) - set(ov))} added without a minor bump: {need_minor}"))
        for k in sorted(set(nv) - set(ov)) if bumped else ():
            if en.since_of(k) <= old.minor:
                out.append(Violation(name, f"value {k} added with since = {en.since_of(k)}, but "
                                           f"{old.major}.{old.minor} was released without it: write it as "
                                           f"[\"{k}\", {nv[k]}, {new.minor}]"))
    for name, en in new_enums.items():
        if name not in old_enums:
            added(name, en.since, "enum")
    old_handles = {h.name for h in old.handles}
    for h in new.handles:
        if h.name not in old_handles:
            added(h.name, h.since, "handle")
    for name in old_handles - {h.name for h in new.handles}:
        out.append(Violation(name, f"handle removed: {need_major}"))

    # callbacks: the host implements them for every minor of the major, so they are frozen like signatures
    for co in old.callbacks:
        cn = new.callback(co.name)
        if cn is None:
            out.append(Violation(co.name, f"callback removed: {need_major}"))
        elif cn.signature != co.signature:
            out.append(Violation(co.name, f"callback type changed from '{co.signature}' to '{cn.signature}': "
                                          f"{need_major}"))
    for c in new.callbacks:
        if old.callback(c.name) is None:
            added(c.name, c.since, "callback")
    out += _artifact_rules(old, new, need_major)
    return out


def _artifact_rules(old: Manifest, new: Manifest, need_major: str) -> list[Violation]:
    if new.artifact is None:
        return [Violation("[artifact]", "the artifact format declaration was removed: restore it")] \
            if old.artifact is not None else []
    oldest, newest = (old.artifact.oldest_format, old.artifact.format) if old.artifact else (1, 1)
    out = []
    if old.artifact is not None:
        for what in ("file", "section"):
            if getattr(old.artifact, what) != getattr(new.artifact, what):
                out.append(Violation("[artifact]", f"{what} changed from {getattr(old.artifact, what)!r} to "
                                                   f"{getattr(new.artifact, what)!r}: {need_major}"))
    if new.artifact.oldest_format > oldest:
        out.append(Violation("[artifact]", f"oldest_format raised from {oldest} to {new.artifact.oldest_format}: "
                                           f"artifacts of format {oldest} would be refused: {need_major}"))
    if new.artifact.format < newest:
        out.append(Violation("[artifact]", f"format went back from {newest} to {new.artifact.format}: {need_major}"))
    return out


def _dtype_rules(old: Manifest, fo: Function, new: Manifest, fn: Function):
    """(where, old types, new types, old since, new since) for each rule the old kernel had: input 0
    per op, later inputs. The since callables give the ABI minor from which a type is accepted."""
    old_input0, new_input0 = old.input0_dtypes(fo), new.input0_dtypes(fn)
    for op, types in old_input0.items():
        def old_since(d, op=op):
            return old.input0_since(fo, op, d)
        if op is None and None not in new_input0:  # the kernel gained an op attribute
            for new_op, new_types in new_input0.items():
                yield (f"op {new_op}, input 0", types, new_types, old_since,
                       lambda d, new_op=new_op: new.input0_since(fn, new_op, d))
            continue
        # An op the new manifest lost is reported with its enum; its types count as gone.
        where = f"op {op}, input 0" if op is not None else "input 0"
        yield (where, types, new_input0.get(op, new_input0.get(None, ())), old_since,
               lambda d, op=op: new.input0_since(fn, op, d))
    old_later, new_later = old.later_input_dtypes(fo), new.later_input_dtypes(fn)
    for i in sorted(set(old_later) | set(new_later)):
        yield (f"input {i}", old_later.get(i, old.all_dtypes()), new_later.get(i, new.all_dtypes()),
               lambda d, i=i: old.later_input_since(fo, i, d), lambda d, i=i: new.later_input_since(fn, i, d))


def write_bound_violations(m: Manifest) -> list[Violation]:
    """Writes through a struct pointer that could run past an older caller's struct.

    A struct led by struct_size grows by appended fields, so the struct a caller passes ends
    after the fields of the minor it was built for. A function writing through a non-const
    pointer to one must declare its bound (`writes = { PARAM = BOUND }`), and, since callers
    built for the function's own minor may call it, the bound must not reach past the fields
    of that minor: `caller_struct_size` always holds, `fields_of_MAJOR.K` holds for K up to
    the function's since, `all_fields` only while the struct has no field newer than the function.
    """
    out: list[Violation] = []
    for fn in m.functions:
        declared = dict(fn.writes)
        for param, struct in m.written_structs(fn):
            caller = tuple(f for f in struct.fields if f.since <= fn.since)
            bound = declared.get(param.name)
            if bound is None:
                out.append(Violation(fn.name, (
                    f"writes through '{param.decl()}' ({struct.name} grows by appended fields) but declares no "
                    f"write bound, so the bump rules cannot tell whether it writes past the struct an older "
                    f"caller passes: declare writes = {{ {param.name} = \"{CALLER_STRUCT_SIZE}\" }} if it reads "
                    f"{param.name}->struct_size first and writes only the fields it covers, or "
                    f"\"fields_of_{m.major}.{fn.since}\" if it writes the fields of {m.major}.{fn.since} and no more")))
                continue
            written = m.fields_written(fn, struct, bound)
            if written is None:
                continue
            beyond = [f for f in written if f.since > fn.since]
            if not beyond:
                continue
            newest = max(f.since for f in beyond)
            names = ", ".join(f.param.name for f in beyond)
            out.append(Violation(fn.name, (
                f"writes {struct.name} through '{param.decl()}' with the bound \"{bound}\", which covers "
                f"{names} (added in {m.major}.{min(f.since for f in beyond)}"
                f"{f' to {m.major}.{newest}' if newest != min(f.since for f in beyond) else ''}); a caller built "
                f"for {m.major}.{fn.since} (the function's since) passes {m.layout_size(caller)} bytes and would "
                f"have {m.layout_size(written)} written, past its end. Make the function read "
                f"{param.name}->struct_size and write only the fields it covers (writes = {{ {param.name} = "
                f"\"{CALLER_STRUCT_SIZE}\" }}), or write only the fields of {m.major}.{fn.since} (writes = "
                f"{{ {param.name} = \"fields_of_{m.major}.{fn.since}\" }})")))
    return out


def _appended_attrs(old: Manifest, fo: Function, new: Manifest, fn: Function) -> list[Violation]:
    """Attributes a kernel gained since `old` must carry a later since: a compiler of `old`'s era reads
    the newer manifest and passes every attribute it lists without one, values it cannot know."""
    out = []
    for kind, before, after in (("int", fo.int_attrs, fn.int_attrs), ("float", fo.float_attrs, fn.float_attrs)):
        for attr in before:
            if new.attr_since_of(fn, attr) != old.attr_since_of(fo, attr):
                out.append(Violation(fo.name, f"{kind} attribute {attr}: since changed from "
                                              f"{old.attr_since_of(fo, attr)} to {new.attr_since_of(fn, attr)}: "
                                              f"history is immutable"))
        for attr in after[len(before):]:
            if new.attr_since_of(fn, attr) <= old.minor:
                out.append(Violation(fo.name, f"{kind} attribute {attr} was appended after {old.major}.{old.minor} "
                                              f"without a since: compilers of {old.major}.{old.minor} reading this "
                                              f"manifest would pass it without knowing its value. Write it as "
                                              f"[\"{attr}\", {new.minor}]"))
    return out
