// OrtAllocator over the runtime's caching device allocator (GPU backends).
#pragma once

#include <memory>

#include "ep_utils.h"
#include "runtime_state.h"

namespace hipdnn_ep {

class EpAllocator : public OrtAllocator {
 public:
  // `memory_info` is owned by the caller (the factory) and outlives us.
  EpAllocator(std::shared_ptr<RuntimeState> state, std::shared_ptr<RuntimeApi> rt, const OrtMemoryInfo* memory_info);

 private:
  static void* ORT_API_CALL AllocImpl(OrtAllocator* this_, size_t size) noexcept;
  static void ORT_API_CALL FreeImpl(OrtAllocator* this_, void* p) noexcept;
  static const OrtMemoryInfo* ORT_API_CALL InfoImpl(const OrtAllocator* this_) noexcept;

  std::shared_ptr<RuntimeState> state_;
  std::shared_ptr<RuntimeApi> rt_;
  const OrtMemoryInfo* memory_info_;
};

}  // namespace hipdnn_ep
