// The compatibility check an artifact's metadata must pass before its code is
// loaded: target ABI major/minor and every import's name and signature hash
// against this runtime's manifest.
#pragma once

#include <string>

#include "json.h"

namespace hipdnn_ep {

// This runtime's manifest (hipdnn_ep_abi_manifest), parsed once.
const json::Value& runtime_manifest();

// Returns OK, INVALID_ARGUMENT (malformed metadata) or ABI_MISMATCH with one
// message naming every missing or mismatched import and both versions.
int32_t check_artifact_abi(const std::string& path, const json::Value& metadata, const json::Value& manifest);

// Resolves every import of the artifact in this library by name and version
// node (dlvsym), as the dynamic loader will: a runtime whose exports differ
// from its own manifest is refused with a message naming each function,
// instead of failing in dlopen with `undefined symbol`. Call after
// check_artifact_abi (which guarantees each import is in the manifest).
int32_t check_artifact_exports(const std::string& path, const json::Value& metadata, const json::Value& manifest);

}  // namespace hipdnn_ep
