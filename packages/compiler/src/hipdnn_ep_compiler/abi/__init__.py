"""Access to the runtime ABI manifest (the JSON generated from packages/abi/manifest.toml)."""

from . import metadata_schema, protocol_schema
from .manifest import AbiFunction, RuntimeAbi, bundled_manifest_path, load_abi

__all__ = ["RuntimeAbi", "AbiFunction", "load_abi", "bundled_manifest_path", "metadata_schema", "protocol_schema"]
