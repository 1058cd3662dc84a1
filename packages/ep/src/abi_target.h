// Which runtime ABI a compile targets, and how an ABI version is written.
#pragma once

#include <cstdint>
#include <string>

#include "compile_client.h"

namespace hipdnn_ep {

// "MAJOR.MINOR" of an ABI version (major << 16 | minor).
std::string AbiText(uint32_t abi);

// The ABI to compile for: the runtime's, or, when the runtime is newer than
// the compiler, the newest minor of the same major the compiler knows (minors
// only add functions, so such code runs on the newer runtime).  Throws when
// the compiler knows no ABI the runtime can run.
uint32_t TargetAbi(uint32_t runtime_abi, const CompilerCapabilities& caps);

}  // namespace hipdnn_ep
