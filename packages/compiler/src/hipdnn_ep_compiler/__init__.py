"""hipdnn-ep-compiler: compiles ONNX graphs into host programs that call the hipdnn-ep runtime ABI."""

from ._version import __version__
from .artifact import ArtifactInfo, read_metadata
from .compiler import compile_model
from .errors import AbiTargetError, ArtifactError, CompileError, LinkError, ModelError, UnsupportedError
from .frontend import supported_ops
from .weights import load_weights

__all__ = [
    "__version__", "compile_model", "supported_ops", "read_metadata", "load_weights", "ArtifactInfo",
    "CompileError", "ModelError", "UnsupportedError", "AbiTargetError", "LinkError", "ArtifactError",
]
