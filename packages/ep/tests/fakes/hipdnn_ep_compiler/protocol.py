"""Protocol-1 test double: compiles same-shape elementwise graphs to C."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import onnx

from . import __version__

OPS = {"Add": "a[i] + b[i]", "Mul": "a[i] * b[i]", "Relu": "a[i] > 0 ? a[i] : 0"}
INCLUDE = os.environ.get("FAKE_COMPILER_INCLUDE", "")
# Like the real compiler, link the program against the runtime (by soname).
RUNTIME = os.environ.get("FAKE_COMPILER_RUNTIME", "")


def _c_name(i: int) -> str:
    return f"v{i}"


def compile_model(model_path: str, out_dir: str, backend: str) -> dict:
    external = [t.name for t in onnx.load(model_path, load_external_data=False).graph.initializer
                if t.data_location == onnx.TensorProto.EXTERNAL]
    model = onnx.load(model_path)  # loads weights.bin (external data) too
    onnx.checker.check_model(model)
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    for t in inits.values():
        if t.data_type != onnx.TensorProto.FLOAT:
            raise ValueError(f"fake compiler: initializer {t.name} is not float")
    args = [i.name for i in g.input] + list(inits)
    lines = ["#include <stdint.h>", "#include <string.h>", "#include <hipdnn_ep/runtime_abi.h>",
             "static _Thread_local int64_t out_dims[16][8];",
             "HIPDNN_EP_API int32_t hipdnn_ep_program_run(hipdnn_ep_state_t* s, const hipdnn_ep_tensor_ref_t* in,"
             " hipdnn_ep_tensor_ref_t* out) {",
             "  int64_t n = 1; for (int d = 0; d < in[0].rank; ++d) n *= in[0].dims[d];",
             "  int32_t rc = 0;"]
    names = {name: f"((float*)in[{k}].data)" for k, name in enumerate(args)}
    temps = []
    for k, node in enumerate(g.node):
        if node.op_type not in OPS:
            raise ValueError(f"fake compiler: {node.op_type} unsupported")
        v = _c_name(k)
        lines.append(f"  float* {v} = 0; if ((rc = hipdnn_ep_malloc(s, n > 0 ? n * 4 : 4, (void**)&{v}))) return rc;")
        a = names[node.input[0]]
        b = names[node.input[1]] if len(node.input) > 1 else a
        lines.append(f"  {{ const float* a = {a}; const float* b = {b}; (void)b;"
                     f" for (int64_t i = 0; i < n; ++i) {v}[i] = {OPS[node.op_type]}; }}")
        names[node.output[0]] = v
        temps.append((node.output[0], v))
    outputs = [o.name for o in g.output]
    for j, name in enumerate(outputs):
        lines.append(f"  memcpy(out_dims[{j}], in[0].dims, sizeof(int64_t) * in[0].rank);")
        lines.append(f"  out[{j}].data = {names[name]}; out[{j}].dims = out_dims[{j}]; out[{j}].rank = in[0].rank;"
                     f" out[{j}].dtype = 1;")
    for name, v in temps:
        if name not in outputs:
            lines.append(f"  hipdnn_ep_free(s, {v});")
    lines += ["  return 0;", "}"]
    def spec(vi):
        dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
                for d in vi.type.tensor_type.shape.dim]
        return {"name": vi.name, "dtype": vi.type.tensor_type.elem_type, "dims": dims}

    meta = {"format": 1, "compiler": {"name": "hipdnn-ep-compiler", "version": __version__}, "backend": backend,
            "inputs": [spec(i) for i in g.input], "outputs": [spec(o) for o in g.output],
            "weights": [{"name": t.name, "dtype": t.data_type, "dims": list(t.dims)} for t in inits.values()]}
    # The real compiler embeds metadata in an ELF section; the double uses a symbol.
    lines.append(f"HIPDNN_EP_API const char hipdnn_fake_metadata[] = {json.dumps(json.dumps(meta))};")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "program.c").write_text("\n".join(lines) + "\n")
    so = out / "program.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-O1", f"-I{INCLUDE}", "-o", str(so), str(out / "program.c"),
                    "-Wl,-z,defs", RUNTIME],
                   check=True, capture_output=True)

    log = os.environ.get("FAKE_COMPILER_LOG")
    if log:
        with open(log, "a") as f:
            f.write(json.dumps({"model": model_path, "nodes": [n.op_type for n in g.node],
                                "inputs": [i.name for i in g.input], "weights": list(inits),
                                "value_info": [v.name for v in g.value_info],
                                "external": external}) + "\n")
    return {"protocol": 1, "ok": True, "artifact": str(out), "metadata": meta}


def main() -> int:
    req = json.loads(sys.stdin.read())
    if req.get("action") == "capabilities":
        resp = {"protocol": 1, "ok": True, "compiler_version": __version__, "abi": {"major": 1, "minors": [0, 1]},
                "backends": ["cpu"], "ops": {"ai.onnx": sorted(OPS)}}
    else:
        try:
            resp = compile_model(req["model"], req["output"], req.get("backend", "cpu"))
        except Exception as exc:  # noqa: BLE001 - every failure becomes a protocol error
            resp = {"protocol": 1, "ok": False, "error": {"kind": type(exc).__name__, "message": str(exc)}}
    print(json.dumps(resp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
