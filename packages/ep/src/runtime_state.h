// Owning wrapper of a runtime state, and a pool of them for concurrent runs
// (a state is not safe for two concurrent runs).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <mutex>
#include <vector>

#include "mapped_weights.h"
#include "runtime_api.h"

namespace hipdnn_ep {

struct StateConfig {
  int32_t backend = HIPDNN_EP_BACKEND_CPU;
  int32_t device_id = 0;
  uint64_t memory_limit_bytes = 0;  // 0: no limit
  bool graph_capture = true;        // GPU backends: capture and replay programs
};

class RuntimeState {
 public:
  RuntimeState(std::shared_ptr<RuntimeApi> rt, const StateConfig& config);
  ~RuntimeState();
  RuntimeState(const RuntimeState&) = delete;
  RuntimeState& operator=(const RuntimeState&) = delete;
  hipdnn_ep_state_t* get() const { return state_; }

  // The device copy of constant host data of a program (initializers ORT
  // does not pass), uploaded on the first call for (program, arg) and kept
  // until ReleaseDeviceCopies(program) or the state is destroyed, so GPU runs
  // do not copy weights per Run (thread-safe: the device state of a
  // factory holds the weights of every run state of that device).
  // Returns the runtime status (OUT_OF_MEMORY counts against the limit).
  // `uploaded` (optional): set when this call made the copy. `mapped`
  // (optional): the file `host` is a mapping of, checked unchanged only when
  // the bytes are about to be read; throws EpError if not.
  int32_t DeviceCopy(uint64_t program, size_t arg, const void* host, uint64_t bytes, void** out,
                     bool* uploaded = nullptr, const MappedFile* mapped = nullptr);
  void ReleaseDeviceCopies(uint64_t program);

 private:
  std::shared_ptr<RuntimeApi> rt_;
  hipdnn_ep_state_t* state_ = nullptr;
  std::mutex copies_mu_;
  std::map<std::pair<uint64_t, size_t>, void*> device_copies_;
};

class StatePool {
 public:
  StatePool(std::shared_ptr<RuntimeApi> rt, StateConfig config, size_t max_idle)
      : rt_(std::move(rt)), config_(config), max_idle_(max_idle) {}

  // A state for one run; returned to the pool when the handle dies.
  using Handle = std::unique_ptr<RuntimeState, std::function<void(RuntimeState*)>>;
  Handle Acquire();
  const StateConfig& config() const { return config_; }

 private:
  std::shared_ptr<RuntimeApi> rt_;
  StateConfig config_;
  size_t max_idle_;
  std::mutex mu_;
  std::vector<std::unique_ptr<RuntimeState>> idle_;
};

}  // namespace hipdnn_ep
