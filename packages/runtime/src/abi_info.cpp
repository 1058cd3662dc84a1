// The runtime states its ABI: version and the full manifest.
#include "runtime_internal.h"

namespace hipdnn_ep {
extern const char kAbiManifestJson[];  // abi_manifest_data.cpp (generated)
}  // namespace hipdnn_ep

extern "C" uint32_t hipdnn_ep_abi_version(void) { return HIPDNN_EP_ABI_VERSION; }

extern "C" const char* hipdnn_ep_abi_manifest(void) { return hipdnn_ep::kAbiManifestJson; }
