#include "host_scratch.h"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace hipdnn_ep {

GrowOnDemandBlock::GrowOnDemandBlock(Allocate allocate, Release release, uint64_t min_capacity)
    : allocate_(std::move(allocate)), release_(std::move(release)), min_capacity_(min_capacity) {}

GrowOnDemandBlock::~GrowOnDemandBlock() { release_all(); }

int32_t GrowOnDemandBlock::get(uint64_t size, void** out_base) {
  if (current_.base != nullptr && size <= current_.size) {
    *out_base = current_.base;
    return HIPDNN_EP_STATUS_OK;
  }
  // Geometric growth keeps the number of retired blocks per run small.
  uint64_t capacity = std::max(size, min_capacity_);
  if (current_.size <= UINT64_MAX / 2) capacity = std::max(capacity, current_.size * 2);
  void* base = nullptr;
  if (int32_t status = allocate_(capacity, &base); status != HIPDNN_EP_STATUS_OK) {
    // Retry at the exact size before giving up (growth may be what failed).
    if (capacity == std::max(size, min_capacity_) ||
        allocate_(std::max(size, min_capacity_), &base) != HIPDNN_EP_STATUS_OK) {
      return status;
    }
    capacity = std::max(size, min_capacity_);
  }
  if (current_.base != nullptr) retired_.push_back(current_);
  current_ = {base, capacity};
  held_ += capacity;
  *out_base = base;
  return HIPDNN_EP_STATUS_OK;
}

bool GrowOnDemandBlock::contains(const void* ptr, uint64_t size) const {
  const auto p = reinterpret_cast<uintptr_t>(ptr);
  auto inside = [&](const Held& block) {
    const auto base = reinterpret_cast<uintptr_t>(block.base);
    return block.base != nullptr && p >= base && size <= block.size && p - base <= block.size - size;
  };
  return inside(current_) || std::any_of(retired_.begin(), retired_.end(), inside);
}

void GrowOnDemandBlock::release_retired() {
  for (const Held& block : retired_) {
    release_(block.base);
    held_ -= block.size;
  }
  retired_.clear();
}

void GrowOnDemandBlock::release_all() {
  release_retired();
  if (current_.base != nullptr) {
    release_(current_.base);
    held_ -= current_.size;
    current_ = {nullptr, 0};
  }
}

}  // namespace hipdnn_ep
