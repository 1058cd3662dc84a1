"""Element types the compiler handles, by ONNX TensorProto code (the runtime ABI uses the same codes)."""

# code -> (MLIR element type, byte size)
DTYPES: dict[int, tuple[str, int]] = {
    1: ("f32", 4), 2: ("ui8", 1), 3: ("i8", 1), 6: ("i32", 4), 7: ("i64", 8),
    9: ("i1", 1), 10: ("f16", 2), 11: ("f64", 8),
}
DTYPE_NAMES = {1: "float32", 2: "uint8", 3: "int8", 6: "int32", 7: "int64", 9: "bool", 10: "float16", 11: "float64"}
INT64 = 7
