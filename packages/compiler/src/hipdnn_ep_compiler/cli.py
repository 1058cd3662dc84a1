"""hipdnn-ep-compile: compile an ONNX model into an artifact, or inspect an artifact.

  hipdnn-ep-compile MODEL.onnx -o ARTIFACT_DIR [--backend cpu|cuda|hip] [--abi MAJOR.MINOR] [--manifest JSON]
  hipdnn-ep-compile inspect ARTIFACT_DIR [--json]
  hipdnn-ep-compile opt IN.mlir|IN.onnx|- [--pass-pipeline=P] [--split-input-file] [-o OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from ._version import __version__
from .artifact import format_metadata, read_metadata
from .errors import CompileError


def _compile_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hipdnn-ep-compile",
                                description="Compile an ONNX model into a hipdnn-ep artifact.",
                                epilog="Use 'hipdnn-ep-compile inspect ARTIFACT_DIR' to print an artifact's metadata, "
                                       "'hipdnn-ep-compile opt --help' to run passes on IR.")
    p.add_argument("model", help="ONNX model file")
    p.add_argument("-o", "--output", required=True, help="artifact directory to write (program.so)")
    p.add_argument("--backend", choices=("cpu", "cuda", "hip"), default="cpu",
                   help="backend recorded in the artifact (the runtime selects kernels per backend)")
    p.add_argument("--abi", default=None, help="target runtime ABI MAJOR.MINOR (default: newest known)")
    p.add_argument("--manifest", default=None,
                   help="runtime ABI manifest JSON to compile against (default: the one bundled with the compiler; "
                        "an installed runtime ships its own as hipdnn_ep_runtime/abi_manifest.json)")
    p.add_argument("--version", action="version", version=f"hipdnn-ep-compiler {__version__}")
    return p


def _inspect_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hipdnn-ep-compile inspect", description="Print an artifact's metadata.")
    p.add_argument("artifact", help="artifact directory (or its program.so)")
    p.add_argument("--json", action="store_true", help="print the raw metadata JSON")
    return p


def _opt_parser() -> argparse.ArgumentParser:
    from .passes import PASSES

    p = argparse.ArgumentParser(prog="hipdnn-ep-compile opt",
                                description="Run passes on hipdnn IR and print the result (like mlir-opt).")
    p.add_argument("input", help="an .mlir file, an .onnx model (imported first) or - for stdin")
    p.add_argument("--pass-pipeline", default=None,
                   help=f"comma-separated passes, optionally as builtin.module(...): {', '.join(PASSES)}, "
                        "lower-to-llvm (last), or any MLIR pass")
    p.add_argument("--split-input-file", action="store_true",
                   help="handle each part between '// -----' lines on its own")
    p.add_argument("-o", "--output", default=None, help="write the result here instead of stdout")
    p.add_argument("--abi", default=None, help="target runtime ABI MAJOR.MINOR for check-dtypes and lowering")
    p.add_argument("--manifest", default=None, help="runtime ABI manifest JSON (default: the bundled one)")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] == "inspect":
            args = _inspect_parser().parse_args(argv[1:])
            meta = read_metadata(args.artifact)
            print(json.dumps(meta, indent=2) if args.json else format_metadata(meta))
            return 0
        if argv and argv[0] == "opt":
            from . import opt

            return opt.main(_opt_parser().parse_args(argv[1:]))
        args = _compile_parser().parse_args(argv)
        from .compiler import compile_model  # imports MLIR; keep `inspect` light

        info = compile_model(args.model, args.output, backend=args.backend, abi=args.abi, manifest=args.manifest)
        abi = info.metadata["abi"]
        print(f"wrote {info.program} (ABI {abi['major']}.{abi['min_minor']}, {len(info.imports)} imports)")
        return 0
    except CompileError as exc:
        print(f"hipdnn-ep-compile: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `inspect ... | head`: the reader left, which is not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
