// Grow-on-demand blocks with stable pointers: the host scratch (host-visible
// memory for host scalars such as dynamic dims) and the device pool (planned
// intermediates) follow the same rules:
//   * while the requested size fits, the same base is returned;
//   * a larger size returns a new base (capacity at least doubles) and retires
//     the old block, which stays valid and unchanged until release_retired()
//     (called by hipdnn_ep_synchronize).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "runtime_internal.h"

namespace hipdnn_ep {

class GrowOnDemandBlock {
 public:
  // allocate returns a status (the error already set); release frees.
  using Allocate = std::function<int32_t(uint64_t size, void** out)>;
  using Release = std::function<void(void* ptr)>;

  GrowOnDemandBlock(Allocate allocate, Release release, uint64_t min_capacity);
  ~GrowOnDemandBlock();  // releases the current and every retired block
  GrowOnDemandBlock(const GrowOnDemandBlock&) = delete;
  GrowOnDemandBlock& operator=(const GrowOnDemandBlock&) = delete;

  int32_t get(uint64_t size, void** out_base);
  void release_retired();
  void release_all();
  // Bytes held: the current block plus the retired ones.
  uint64_t bytes_held() const { return held_; }
  // Whether [ptr, ptr + size) lies inside the current or a retired block.
  bool contains(const void* ptr, uint64_t size) const;

 private:
  struct Held {
    void* base;
    uint64_t size;
  };
  Allocate allocate_;
  Release release_;
  uint64_t min_capacity_;
  Held current_{nullptr, 0};
  std::vector<Held> retired_;
  uint64_t held_ = 0;
};

}  // namespace hipdnn_ep
