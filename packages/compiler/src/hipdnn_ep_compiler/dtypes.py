"""Element types the compiler handles, by ONNX TensorProto code (the runtime ABI uses the same codes).

Codes, names and byte sizes come from the bundled ABI manifest's dtype enum (its element_bytes
table, the one dtype table of the project); only the MLIR spelling of each type is the compiler's.
"""

import json

from .abi import bundled_manifest_path

_MLIR = {"FLOAT32": "f32", "UINT8": "ui8", "INT8": "i8", "INT32": "i32", "INT64": "i64", "BOOL": "i1",
         "FLOAT16": "f16", "FLOAT64": "f64", "UINT16": "ui16", "INT16": "i16", "UINT32": "ui32", "UINT64": "ui64",
         "BFLOAT16": "bf16", "FLOAT8E4M3FN": "f8E4M3FN", "FLOAT8E4M3FNUZ": "f8E4M3FNUZ", "FLOAT8E5M2": "f8E5M2",
         "FLOAT8E5M2FNUZ": "f8E5M2FNUZ"}


def _dtype_enum() -> dict:
    data = json.loads(bundled_manifest_path().read_text())
    prefix = data["abi"]["prefix"]
    return next(e for e in data["enums"] if e["name"] == f"{prefix}_dtype")


_ENUM = _dtype_enum()
# code -> (MLIR element type, byte size)
DTYPES: dict[int, tuple[str, int]] = {code: (_MLIR[name], _ENUM["element_bytes"][name])
                                      for name, code in _ENUM["values"].items() if name in _MLIR}
DTYPE_NAMES = {code: name.lower() for name, code in _ENUM["values"].items()}
INT64 = _ENUM["values"]["INT64"]
