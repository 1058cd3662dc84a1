"""hipdnn_ep_abi: the runtime ABI manifest, its generators and its gates.

Standard library only (plus tomli, tomllib's backport, on Python 3.10), so the runtime build,
the compiler's tooling and CI can all run it before anything is installed.
"""

from .compat import Violation
from .model import DEFAULT_MANIFEST, Manifest, ManifestError, load, parse

__all__ = ["DEFAULT_MANIFEST", "Manifest", "ManifestError", "Violation", "load", "parse"]
