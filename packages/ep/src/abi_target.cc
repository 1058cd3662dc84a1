#include "abi_target.h"

#include "ep_utils.h"

namespace hipdnn_ep {

std::string AbiText(uint32_t abi) { return std::to_string(abi >> 16) + "." + std::to_string(abi & 0xffff); }

uint32_t TargetAbi(uint32_t runtime_abi, const CompilerCapabilities& caps) {
  if (caps.abi_major < 0) return runtime_abi;  // the compiler does not say: ask for the runtime's
  const int64_t major = runtime_abi >> 16, minor = runtime_abi & 0xffff;
  int64_t best = -1;
  std::string known;
  for (int64_t m : caps.abi_minors) {
    known += (known.empty() ? "" : ", ") + std::to_string(caps.abi_major) + "." + std::to_string(m);
    if (caps.abi_major == major && m <= minor && m > best) best = m;
  }
  if (best < 0) {
    throw EpError("hipdnn-ep: " + caps.name + " " + caps.version + " cannot compile for the runtime's ABI " +
                  AbiText(runtime_abi) + " (it targets ABI " + (known.empty() ? std::string("none") : known) +
                  "). Fix: install a hipdnn-ep-compiler for runtime ABI major " + std::to_string(major) +
                  " (pip install 'hipdnn-ep-compiler[runtime]' with hipdnn-ep's pins: pip install -U hipdnn-ep)");
  }
  return static_cast<uint32_t>((major << 16) | best);
}

}  // namespace hipdnn_ep
