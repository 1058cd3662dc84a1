#include "ep_allocator.h"

namespace hipdnn_ep {

EpAllocator::EpAllocator(std::shared_ptr<RuntimeState> state, std::shared_ptr<RuntimeApi> rt,
                         const OrtMemoryInfo* memory_info)
    : OrtAllocator{}, state_(std::move(state)), rt_(std::move(rt)), memory_info_(memory_info) {
  version = ORT_API_VERSION;
  Alloc = AllocImpl;
  Free = FreeImpl;
  Info = InfoImpl;
  Reserve = AllocImpl;
}

void* ORT_API_CALL EpAllocator::AllocImpl(OrtAllocator* this_, size_t size) noexcept {
  auto* self = static_cast<EpAllocator*>(this_);
  void* p = nullptr;
  // ORT treats nullptr as allocation failure and reports it itself.
  if (size == 0 || self->rt_->hipdnn_ep_malloc(self->state_->get(), size, &p) != HIPDNN_EP_STATUS_OK) return nullptr;
  return p;
}

void ORT_API_CALL EpAllocator::FreeImpl(OrtAllocator* this_, void* p) noexcept {
  auto* self = static_cast<EpAllocator*>(this_);
  if (p) self->rt_->hipdnn_ep_free(self->state_->get(), p);
}

const OrtMemoryInfo* ORT_API_CALL EpAllocator::InfoImpl(const OrtAllocator* this_) noexcept {
  return static_cast<const EpAllocator*>(this_)->memory_info_;
}

}  // namespace hipdnn_ep
