"""hipdnn-ep-compile opt: run passes on IR read from a file and print the result (mlir-opt's role).

  hipdnn-ep-compile opt IN.mlir|IN.onnx|- [--pass-pipeline=P] [--split-input-file] [--abi M.N] [-o OUT]

The pipeline is a comma-separated list of passes, optionally wrapped as `builtin.module(...)`, run
in one MLIR PassManager (passes/pipeline.py): this compiler's passes by name (refine-shapes,
check-dtypes, eliminate-dead-ops, materialize-host-scalars, plan-memory), any upstream MLIR pass or
nested pipeline (parsed by MLIR, options included), and `lower-to-llvm` last (prints the LLVM-dialect
host program).  Without a pipeline the input is parsed, verified and printed.  An ONNX model as input
is imported first, so `opt model.onnx` prints the IR the passes start from.  With --split-input-file
the input is cut at lines `// -----`, each part handled on its own and the outputs joined by the
same marker; a part that fails prints `// error: <message>` in its place (the exit status is then 1).
"""

from __future__ import annotations

import sys
from pathlib import Path

from . import ir as hir
from .errors import CompileError

SPLIT = "// -----"
LOWER = "lower-to-llvm"


def parse_pipeline(text: str | None) -> list[str]:
    """The elements of `a,b` or `builtin.module(a,b)` (an element's options and nested pipelines kept whole)."""
    from .passes.pipeline import split

    return split(text)


def run_passes(module, names: list[str], abi=None) -> str:
    """Run `names` on `module` in one pass manager; the printed result."""
    from .passes import PASSES
    from .passes.pipeline import Pipeline, UnknownPassError

    lower = bool(names) and names[-1] == LOWER
    passes = names[:-1] if lower else names
    if LOWER in passes:
        raise CompileError(f"{LOWER} must be the last pass of the pipeline")
    try:
        pipeline = Pipeline(passes, module.context, abi,
                            invalid=lambda when, exc: CompileError(f"the IR fails verification {when}: {exc}"))
    except UnknownPassError as exc:
        known = ", ".join([*PASSES, LOWER])
        raise CompileError(f"unknown pass '{exc.element}': neither one of this compiler's ({known}) nor an "
                           "MLIR pass") from None
    if passes:
        pipeline.run(module)
    if lower:
        from .abi import load_abi
        from .lowering import lower_to_llvm

        return lower_to_llvm(module, abi or load_abi()).text
    return str(module)


def _verify(module, when: str) -> None:
    from . import dialect

    try:
        dialect.verify(module)
    except ValueError as exc:
        raise CompileError(f"the IR fails verification {when}: {exc}") from None


def _one(text: str, names: list[str], abi) -> str:
    ctx = hir.new_context()
    try:
        module = hir.ir.Module.parse(text, ctx)
    except hir.ir.MLIRError as exc:
        raise CompileError(f"the input does not parse: {exc}") from None
    _verify(module, "as read")
    return run_passes(module, names, abi)


def main(args) -> int:
    """args: the parsed `opt` arguments (see cli.py)."""
    from .abi import load_abi

    abi = load_abi(args.manifest, args.abi) if (args.abi or args.manifest) else None
    names = parse_pipeline(args.pass_pipeline)
    if args.input.endswith(".onnx"):
        from .frontend import load_model
        from .frontend.importer import import_model

        text = str(import_model(load_model(args.input)[0]))
    else:
        text = sys.stdin.read() if args.input == "-" else Path(args.input).read_text()
    parts = text.split(f"\n{SPLIT}\n") if args.split_input_file else [text]
    outputs, status = [], 0
    for part in parts:
        try:
            outputs.append(_one(part, names, abi).rstrip("\n"))
        except CompileError as exc:
            if not args.split_input_file:
                raise
            outputs.append(f"// error: {exc}")
            status = 1
    out = f"\n{SPLIT}\n".join(outputs) + "\n"
    if args.output:
        Path(args.output).write_text(out)
    else:
        sys.stdout.write(out)
    return status
