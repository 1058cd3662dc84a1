"""The compiler's error vocabulary: every user-reachable failure raises one of these."""


class CompileError(Exception):
    """Base class of every error the compiler reports to a user."""


class ModelError(CompileError):
    """The ONNX model is malformed (fails the checker or shape inference, bad opset, bad attributes)."""


class UnsupportedError(CompileError):
    """The model is valid ONNX but uses something this compiler cannot compile (names the node)."""


class AbiTargetError(CompileError):
    """The requested runtime ABI cannot express the graph: a needed function is missing or too new."""


class LinkError(CompileError):
    """Linking the host program into a shared object failed."""


class ArtifactError(CompileError):
    """An artifact directory or its embedded metadata cannot be read."""
