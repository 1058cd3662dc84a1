"""Python modules MLIR's bindings import for the ops of a dialect namespace (see ir.py).

They define no op classes.  The bindings import `<prefix>.<namespace>` the first time an op of a
namespace is accessed, and retry (never caching a failure) on every access when no module exists;
these make that one successful import for `onnx` and `hipdnn`.
"""
