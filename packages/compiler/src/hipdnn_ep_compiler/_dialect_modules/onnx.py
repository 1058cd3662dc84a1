"""No op classes for the onnx namespace: see __init__.py."""
