"""Job 2: each combination's expected outcome from the wheels' own metadata (pip pins, ABI versions)."""

from __future__ import annotations

from dataclasses import dataclass

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from .wheels import Wheel


@dataclass(frozen=True)
class Expected:
    outcome: str  # "pass", "pip" (pip refuses the set), "abi" (our ABI check refuses it)
    why: str
    target: tuple[int, int] | None = None  # the ABI the code is compiled for


def _requirement(wheel: Wheel, name: str, extras: set[str]) -> Requirement | None:
    for text in wheel.requires:
        req = Requirement(text)
        if canonicalize_name(req.name) != canonicalize_name(name):
            continue
        if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in extras or {""}):
            return req
    return None


def expect(compiler: Wheel, runtime: Wheel, ep: Wheel) -> Expected:
    """What installing and running this combination must give, from the wheels' metadata alone."""
    wanted = [(ep, compiler, {""}), (ep, runtime, {""})]
    creq = _requirement(ep, compiler.name, {""})
    wanted.append((compiler, runtime, set(creq.extras) if creq else set()))
    for who, dep, extras in wanted:
        req = _requirement(who, dep.name, extras)
        if req is not None and not req.specifier.contains(Version(dep.version), prereleases=True):
            return Expected("pip", f"{who.name} {who.version} requires {req}")
    (rmaj, rmin), (emaj, emin), (cmaj, cmin) = runtime.abi, ep.abi, compiler.abi
    if rmaj != emaj or rmin < emin:
        return Expected("abi", f"the EP needs runtime ABI {emaj}.{emin}, the runtime has {rmaj}.{rmin}")
    if cmaj != rmaj:
        return Expected("abi", f"the compiler targets ABI major {cmaj}, the runtime has {rmaj}.{rmin}")
    return Expected("pass", "", (rmaj, min(rmin, cmin)))
