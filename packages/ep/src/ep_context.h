// EPContext support: the compatibility string stored in compiled models and
// its verdict against the running runtime, and the trust rule for native
// code carried by EPContext models.
#pragma once

#include <onnxruntime_c_api.h>

#include <cstdint>
#include <string>

#include "private_files.h"

namespace hipdnn_ep {

// "hipdnn-ep;abi=MAJOR.MINOR;backend=B;compiler=NAME VERSION"
std::string MakeCompatibilityInfo(uint32_t abi_version, const std::string& backend, const std::string& compiler);

// Verdict for a compiled model: another EP's string -> NOT_APPLICABLE;
// unparsable or another ABI major, or a newer minor than the runtime has ->
// UNSUPPORTED; an older minor -> SUPPORTED_PREFER_RECOMPILATION (the code
// runs, a recompile could use newer runtime functions); equal -> OPTIMAL.
OrtCompiledModelCompatibility CompatibilityVerdict(const std::string& info, uint32_t runtime_abi_version);

// Per-install signing: tag = "hmac-sha256:" + HMAC-SHA256(secret, artifact
// bytes), where the secret is a random key created on first use in the cache
// directory (mode 0600), read and created through the folder's descriptor.
// An EPContext artifact whose tag verifies was
// produced by this install; anything else (including tags of the older
// SHA-256(secret || bytes) form) is foreign native code.
std::string InstallKey(const PrivateDir& cache_dir);
std::string SignArtifact(const std::string& key, const std::string& artifact_bytes);
// True when `tag` is SignArtifact(key, artifact_bytes), compared in constant time.
bool VerifyArtifactTag(const std::string& key, const std::string& artifact_bytes, const std::string& tag);

}  // namespace hipdnn_ep
