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

}  // namespace hipdnn_ep
