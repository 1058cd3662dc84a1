#include "runtime_state.h"

#include <cstdio>

namespace hipdnn_ep {

RuntimeState::RuntimeState(std::shared_ptr<RuntimeApi> rt, const StateConfig& config) : rt_(std::move(rt)) {
  hipdnn_ep_state_options_t opts{};
  rt_->hipdnn_ep_state_options_init(&opts);  // the ABI 1.0 fields; the graph fields are set below
  opts.struct_size = sizeof(opts);
  opts.backend = config.backend;
  opts.device_ordinal = config.device_id;
  opts.memory_limit_bytes = config.memory_limit_bytes;
  opts.graph_capture = config.graph_capture ? 1 : 0;
  opts.graph_cache_size = 0;  // the runtime's default
  rt_->Check("hipdnn_ep_state_create", rt_->hipdnn_ep_state_create(&opts, &state_));
}

int32_t RuntimeState::DeviceCopy(uint64_t program, size_t arg, const void* host, uint64_t bytes, void** out,
                                 bool* uploaded, const MappedFile* mapped) {
  std::lock_guard<std::mutex> lock(copies_mu_);
  if (uploaded != nullptr) *uploaded = false;
  auto it = device_copies_.find({program, arg});
  if (it != device_copies_.end()) {
    *out = it->second;
    return HIPDNN_EP_STATUS_OK;
  }
  if (mapped != nullptr) mapped->CheckUnchanged();  // one fstat, only before the bytes are read
  void* ptr = nullptr;
  int32_t rc = rt_->hipdnn_ep_malloc(state_, bytes, &ptr);
  if (rc != HIPDNN_EP_STATUS_OK) return rc;
  rc = rt_->hipdnn_ep_memcpy(state_, ptr, host, bytes, HIPDNN_EP_MEMCPY_KIND_HOST_TO_DEVICE);
  if (rc != HIPDNN_EP_STATUS_OK) {
    rt_->hipdnn_ep_free(state_, ptr);
    return rc;
  }
  device_copies_[{program, arg}] = ptr;
  *out = ptr;
  if (uploaded != nullptr) *uploaded = true;
  return HIPDNN_EP_STATUS_OK;
}

void RuntimeState::ReleaseDeviceCopies(uint64_t program) {
  std::lock_guard<std::mutex> lock(copies_mu_);
  for (auto it = device_copies_.lower_bound({program, 0}); it != device_copies_.end() && it->first.first == program;) {
    rt_->hipdnn_ep_free(state_, it->second);
    it = device_copies_.erase(it);
  }
}

RuntimeState::~RuntimeState() {
  for (const auto& entry : device_copies_) {
    if (state_) rt_->hipdnn_ep_free(state_, entry.second);
  }
  // A destructor cannot return LEAK_DETECTED; Compute frees every output even
  // when a run fails, so a leak is a bug of the EP or the program: say so.
  if (state_ && rt_->hipdnn_ep_state_destroy(state_) == HIPDNN_EP_STATUS_LEAK_DETECTED) {
    std::fprintf(stderr, "%s\n", rt_->Error("hipdnn_ep_state_destroy", HIPDNN_EP_STATUS_LEAK_DETECTED).c_str());
  }
}

StatePool::Handle StatePool::Acquire() {
  std::unique_ptr<RuntimeState> state;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      state = std::move(idle_.back());
      idle_.pop_back();
    }
  }
  if (!state) state = std::make_unique<RuntimeState>(rt_, config_);
  return Handle(state.release(), [this](RuntimeState* s) {
    std::unique_ptr<RuntimeState> owned(s);
    std::lock_guard<std::mutex> lock(mu_);
    if (idle_.size() < max_idle_) idle_.push_back(std::move(owned));
  });
}

}  // namespace hipdnn_ep
