"""Where the plugin library is and what the EP is called."""

from __future__ import annotations

from pathlib import Path

# The name the factory reports (ep_factory.h kEpName); options reach the EP
# as "ep.hipdnnep.<key>".
_EP_NAME = "HipdnnEp"
_LIBRARY_GLOB = "libhipdnn_ep_plugin*.so"


def get_library_path() -> str:
    """Absolute path of the plugin library installed inside this package.

    Only the package folder is searched, and exactly one candidate must exist,
    so an installed package never picks up a stray build.
    """
    return find_library(Path(__file__).resolve().parent)


def find_library(package_dir: Path) -> str:
    """The one plugin library in package_dir; RuntimeError listing what was found otherwise."""
    found = sorted(package_dir.glob(_LIBRARY_GLOB))
    if len(found) != 1:
        listing = ", ".join(p.name for p in found) or "none"
        raise RuntimeError(
            f"expected exactly one {_LIBRARY_GLOB} in {package_dir}, found {len(found)}: {listing}; "
            "reinstall hipdnn-ep"
        )
    return str(found[0])


def get_ep_name() -> str:
    """The execution provider's name as ONNX Runtime lists it."""
    return _EP_NAME


def get_ep_names() -> list[str]:
    """All EP names the library provides (one)."""
    return [_EP_NAME]
