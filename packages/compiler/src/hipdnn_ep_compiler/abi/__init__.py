"""Access to the runtime ABI manifest (the JSON generated from packages/runtime/abi/manifest.toml)."""

from .manifest import RuntimeAbi, AbiFunction, load_abi, bundled_manifest_path

__all__ = ["RuntimeAbi", "AbiFunction", "load_abi", "bundled_manifest_path"]
