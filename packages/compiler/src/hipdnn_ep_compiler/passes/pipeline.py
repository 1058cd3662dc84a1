"""One MLIR `PassManager` for a pipeline of this compiler's passes and upstream ones.

This compiler's passes join it as Python-defined passes (`PassManager.add(callable)`); upstream
elements (`canonicalize`, `func.func(cse)`, `convert-arith-to-llvm{index-bitwidth=64}`) as their
pipeline text, which MLIR parses, options included.  The bindings cannot register a Python pass
under a name MLIR's pipeline parser knows, so a pipeline's text is cut at its top-level commas
(`split`) and each element is looked up here first: that cut is the only parsing done by hand.

The hipdnn dialect verifier (dialect.py, which runs MLIR's verifier too) runs after every element:
as a pass of the same manager after an upstream element and after a pass's FOLLOW, at the end of the
pass itself otherwise.  A Python exception raised by a pass (a model
the compiler refuses, an invalid IR) stops the pass manager and is re-raised as it was.
"""

from __future__ import annotations

from collections.abc import Callable

from torch_mlir import ir
from torch_mlir.passmanager import PassManager

from .. import dialect
from .. import ir as hir
from . import PASSES, PIPELINE, PassDef

ANCHOR = "builtin.module"


class UnknownPassError(ValueError):
    """A pipeline element that is neither one of this compiler's passes nor parsed by MLIR."""

    def __init__(self, element: str):
        super().__init__(element)
        self.element = element


def split(text: str | None) -> list[str]:
    """The elements of `a,b` or `builtin.module(a,b)`: cut at top-level commas (an element's options in
    braces and nested pipelines in parentheses stay whole)."""
    if not text:
        return []
    text = text.strip()
    if text.startswith(f"{ANCHOR}(") and text.endswith(")"):
        text = text[len(ANCHOR) + 1:-1]
    elements, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "({":
            depth += 1
        elif ch in ")}":
            depth -= 1
        elif ch == "," and depth == 0:
            elements.append(text[start:i].strip())
            start = i + 1
    elements.append(text[start:].strip())
    return [e for e in elements if e]


def _internal_invalid(when: str, exc: ValueError) -> Exception:
    return RuntimeError(f"internal error: IR fails verification {when}: {exc}")


class Pipeline:
    """A pass manager for `elements` (pass names or upstream pipeline text), built once, run on modules of
    `context`.

    abi: the runtime ABI manifest for the passes that read it (USES_ABI); they fall back to the bundled one.
    invalid: the exception to raise when the IR fails the hipdnn verifier after an element.
    """

    def __init__(self, elements: list[str], context: ir.Context, abi=None,
                 invalid: Callable[[str, ValueError], Exception] = _internal_invalid):
        self.elements = list(elements)
        self._abi = abi
        self._invalid = invalid
        self._module: ir.Module | None = None
        self._error: BaseException | None = None
        self.pm = PassManager(ANCHOR, context)
        # dialect.verify runs MLIR's verifier as well, after every element: once is enough
        self.pm.enable_verifier(False)
        for element in self.elements:
            p = PASSES.get(element)
            if p is not None:
                # a pass followed by nothing verifies its own result (a pass of its own costs a little more)
                self.pm.add(self._python_pass(p, verify=not p.follow), name=p.name, argument=p.name)
                if not p.follow:
                    continue
                self.pm.add(p.follow)
            else:
                try:
                    self.pm.add(element)
                except ValueError:
                    raise UnknownPassError(element) from None
            self.pm.add(self._verifier(f"after {element}"), name="hipdnn-verify", argument="hipdnn-verify")

    def _guarded(self, body: Callable[[], None], pass_) -> None:
        try:
            body()
        except BaseException as exc:  # noqa: BLE001 - kept, re-raised by run() once MLIR has stopped
            self._error = exc
            pass_.signal_pass_failure()

    def _python_pass(self, p: PassDef, verify: bool):
        def run(_op, pass_) -> None:
            def body() -> None:
                with hir.reading_shapes():
                    p.run(self._module, self._abi)
                if verify:
                    self._verify(f"after {p.name}")
            self._guarded(body, pass_)

        run.__name__ = p.name
        return run

    def _verify(self, when: str) -> None:
        try:
            dialect.verify(self._module)
        except ValueError as exc:
            raise self._invalid(when, exc) from None

    def _verifier(self, when: str):
        def run(_op, pass_) -> None:
            self._guarded(lambda: self._verify(when), pass_)

        return run

    def run(self, module: ir.Module) -> ir.Module:
        """Run the pipeline on `module`, in place."""
        self._module, self._error = module, None
        try:
            self.pm.run(module.operation)
        except ir.MLIRError:
            error, self._error = self._error, None
            if error is not None:
                raise error from None
            raise
        finally:
            self._module = None
        return module


def build(elements: list[str], context: ir.Context, abi=None, **kw) -> Pipeline:
    return Pipeline(elements, context, abi, **kw)


def run_pipeline(module: ir.Module, until: str | None = None, abi=None) -> ir.Module:
    """Run the compile pipeline (or up to and including pass `until`), verifying the IR before the first
    pass and after each.

    abi: the runtime ABI manifest compiled against, for passes that read it; they fall back to the
    bundled manifest.
    """
    names = list(PIPELINE[:PIPELINE.index(until) + 1] if until else PIPELINE)
    try:
        dialect.verify(module)
    except ValueError as exc:
        raise _internal_invalid(f"before {names[0]}", exc) from None
    return Pipeline(names, module.context, abi).run(module)


def run_pass(module: ir.Module, name: str, abi=None) -> ir.Module:
    """Run one pass (with what it names in FOLLOW) in a pass manager of its own, as `opt` does."""
    return Pipeline([name], module.context, abi).run(module)
