#include "caching_allocator.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>

namespace hipdnn_ep {
namespace {

// Small requests share 2 MiB segments; larger ones get their own segment,
// rounded to 2 MiB so that the tail serves later small requests.
constexpr uint64_t kSegmentGranularity = 2u << 20;
constexpr uint64_t kSmallRequest = 1u << 20;

bool round_up(uint64_t value, uint64_t multiple, uint64_t* out) {
  if (value > UINT64_MAX - (multiple - 1)) return false;
  *out = (value + multiple - 1) / multiple * multiple;
  return true;
}

std::string hex(uintptr_t value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(value));
  return buf;
}

}  // namespace

bool CachingAllocator::FreeOrder::operator()(const Block* a, const Block* b) const {
  return std::tie(a->stream, a->size, a->addr) < std::tie(b->stream, b->size, b->addr);
}

CachingAllocator::CachingAllocator(Device* device, uint64_t alignment, uint64_t memory_limit,
                                   DeviceMemoryTotals* totals)
    : device_(device), alignment_(alignment), limit_(memory_limit), totals_(totals) {
  if (totals_ != nullptr) totals_->add_state();
}

CachingAllocator::~CachingAllocator() {
  if (totals_ != nullptr) {
    totals_->sub_in_use(stats_.bytes_in_use);
    totals_->sub_reserved(stats_.bytes_reserved);
    totals_->remove_state();
  }
  for (Segment* seg : segments_) {
    for (Block* b = seg->first; b != nullptr;) {
      Block* next = b->next;
      delete b;
      b = next;
    }
    device_->release(seg->base);
    delete seg;
  }
}

CachingAllocator::Block* CachingAllocator::find_free(uint64_t size, uint64_t stream) {
  Block* best = nullptr;
  for (uint64_t s : {stream, kAnyStream}) {
    Block key{};
    key.stream = s;
    key.size = size;
    auto it = free_.lower_bound(&key);
    if (it != free_.end() && (*it)->stream == s && (best == nullptr || (*it)->size < best->size)) best = *it;
  }
  return best;
}

void CachingAllocator::set_hold(std::vector<void*>* hold) {
  hold_ = hold;
  held_free_.clear();
}

// The smallest block freed during the hold on stream that fits size without wasting more than size again.
CachingAllocator::Block* CachingAllocator::take_held(uint64_t size, uint64_t stream) {
  auto best = held_free_.end();
  for (auto it = held_free_.begin(); it != held_free_.end(); ++it) {
    const uint64_t have = it->first->size;
    if (it->second == stream && have >= size && have / 2 <= size &&
        (best == held_free_.end() || have < best->first->size)) {
      best = it;
    }
  }
  if (best == held_free_.end()) return nullptr;
  Block* block = best->first;
  held_free_.erase(best);
  hold_->erase(std::find(hold_->begin(), hold_->end(), reinterpret_cast<void*>(block->addr)));
  return block;
}

int32_t CachingAllocator::grow(uint64_t size, uint64_t stream, Block** out) {
  uint64_t segment_size = kSegmentGranularity;
  if (size > kSmallRequest && !round_up(size, kSegmentGranularity, &segment_size)) segment_size = size;
  auto fits = [&](uint64_t n) { return limit_ == 0 || (stats_.bytes_reserved <= limit_ && n <= limit_ - stats_.bytes_reserved); };
  if (!fits(segment_size)) {
    // Hand unused cached segments back before giving up, then try the exact size.
    device_->synchronize();
    mark_streams_synchronized();
    release_cached();
    if (!fits(segment_size)) segment_size = size;
  }
  if (!fits(segment_size)) {
    const uint64_t available = limit_ > stats_.bytes_in_use ? limit_ - stats_.bytes_in_use : 0;
    return set_error(HIPDNN_EP_STATUS_OUT_OF_MEMORY,
                     "hipdnn_ep_malloc: out of memory: requested " + std::to_string(size) + " bytes, available " +
                         std::to_string(available) + " bytes (memory limit " + std::to_string(limit_) +
                         ", in use " + std::to_string(stats_.bytes_in_use) + ", reserved " +
                         std::to_string(stats_.bytes_reserved) + ")");
  }
  void* base = nullptr;
  if (device_->allocate(segment_size, alignment_, &base) != HIPDNN_EP_STATUS_OK) {
    device_->synchronize();
    mark_streams_synchronized();
    release_cached();
    segment_size = size;
    if (device_->allocate(segment_size, alignment_, &base) != HIPDNN_EP_STATUS_OK) {
      return set_error(HIPDNN_EP_STATUS_OUT_OF_MEMORY,
                       "hipdnn_ep_malloc: out of device memory: requested " + std::to_string(size) +
                           " bytes with " + std::to_string(stats_.bytes_reserved) + " bytes reserved (" +
                           hipdnn_ep_last_error() + ")");
    }
  }
  auto* seg = new Segment{base, segment_size, nullptr};
  auto* block = new Block{reinterpret_cast<uintptr_t>(base), segment_size, 0, stream, false, seg, nullptr, nullptr};
  seg->first = block;
  segments_.push_back(seg);
  stats_.bytes_reserved += segment_size;
  if (totals_ != nullptr) totals_->add_reserved(segment_size);
  *out = block;
  return HIPDNN_EP_STATUS_OK;
}

CachingAllocator::Block* CachingAllocator::split(Block* block, uint64_t size) {
  // block is not in free_; the remainder (if worth keeping apart) is.
  if (block->size - size < alignment_) return block;
  auto* rest = new Block{block->addr + size, block->size - size, 0, block->stream, false,
                         block->segment, block, block->next};
  if (block->next != nullptr) block->next->prev = rest;
  block->next = rest;
  block->size = size;
  free_.insert(rest);
  return block;
}

int32_t CachingAllocator::allocate(uint64_t size, uint64_t stream, void** out) {
  if (size == 0) return set_error(HIPDNN_EP_STATUS_INVALID_ARGUMENT, "hipdnn_ep_malloc: size must be > 0");
  uint64_t rounded = 0;
  if (!round_up(size, alignment_, &rounded)) {
    return set_error(HIPDNN_EP_STATUS_OUT_OF_MEMORY,
                     "hipdnn_ep_malloc: out of memory: requested " + std::to_string(size) + " bytes");
  }
  if (hold_ != nullptr) {
    if (Block* held = take_held(rounded, stream); held != nullptr) {  // still live and counted in use
      held->requested = size;
      stats_.allocation_count += 1;
      *out = reinterpret_cast<void*>(held->addr);
      return HIPDNN_EP_STATUS_OK;
    }
  }
  Block* block = find_free(rounded, stream);
  if (block != nullptr) {
    free_.erase(block);
  } else if (int32_t status = grow(rounded, stream, &block); status != HIPDNN_EP_STATUS_OK) {
    return status;
  }
  split(block, rounded);
  block->allocated = true;
  block->requested = size;
  block->stream = stream;
  live_.emplace(block->addr, block);
  stats_.bytes_in_use += block->size;
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  if (totals_ != nullptr) totals_->add_in_use(block->size);
  stats_.allocation_count += 1;
  stats_.live_allocations = live_.size();
  *out = reinterpret_cast<void*>(block->addr);
  return HIPDNN_EP_STATUS_OK;
}

void CachingAllocator::merge_with_next(Block* block) {
  Block* next = block->next;
  free_.erase(next);
  block->size += next->size;
  block->next = next->next;
  if (next->next != nullptr) next->next->prev = block;
  delete next;
}

void CachingAllocator::coalesce(Block* block) {
  auto mergeable = [&](const Block* other) {
    return other != nullptr && !other->allocated && other->stream == block->stream;
  };
  if (mergeable(block->next)) merge_with_next(block);
  if (mergeable(block->prev)) {
    Block* prev = block->prev;
    free_.erase(prev);
    merge_with_next(prev);
    block = prev;
  }
  free_.insert(block);
}

int32_t CachingAllocator::free(void* ptr, uint64_t stream) {
  if (ptr == nullptr) return HIPDNN_EP_STATUS_OK;
  auto it = live_.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == live_.end()) {
    return set_error(HIPDNN_EP_STATUS_NOT_FOUND,
                     "hipdnn_ep_free: pointer " + hex(reinterpret_cast<uintptr_t>(ptr)) +
                         " was not allocated by this state or was already freed");
  }
  if (hold_ != nullptr) {
    if (std::find(hold_->begin(), hold_->end(), ptr) != hold_->end()) {
      return set_error(HIPDNN_EP_STATUS_NOT_FOUND,
                       "hipdnn_ep_free: pointer " + hex(reinterpret_cast<uintptr_t>(ptr)) + " was already freed");
    }
    hold_->push_back(ptr);
    held_free_.emplace_back(it->second, stream);
    return HIPDNN_EP_STATUS_OK;
  }
  Block* block = it->second;
  live_.erase(it);
  stats_.bytes_in_use -= block->size;
  if (totals_ != nullptr) totals_->sub_in_use(block->size);
  stats_.live_allocations = live_.size();
  block->allocated = false;
  block->requested = 0;
  block->stream = stream;
  coalesce(block);
  return HIPDNN_EP_STATUS_OK;
}

void CachingAllocator::mark_streams_synchronized() {
  free_.clear();
  for (Segment* seg : segments_) {
    for (Block* b = seg->first; b != nullptr; b = b->next) {
      if (b->allocated) continue;
      b->stream = kAnyStream;
      while (b->next != nullptr && !b->next->allocated) merge_with_next(b);
      free_.insert(b);
    }
  }
}

void CachingAllocator::release_cached() {
  std::vector<Segment*> kept;
  for (Segment* seg : segments_) {
    if (seg->first->next != nullptr || seg->first->allocated) {
      kept.push_back(seg);
      continue;
    }
    free_.erase(seg->first);
    delete seg->first;
    device_->release(seg->base);
    stats_.bytes_reserved -= seg->size;
    if (totals_ != nullptr) totals_->sub_reserved(seg->size);
    delete seg;
  }
  segments_.swap(kept);
}

std::string CachingAllocator::leak_report(size_t max_lines) const {
  std::map<uintptr_t, const Block*> by_address(live_.begin(), live_.end());
  std::string out;
  size_t shown = 0;
  for (const auto& [addr, block] : by_address) {
    if (shown == max_lines) {
      out += "\n  ... and " + std::to_string(by_address.size() - shown) + " more";
      break;
    }
    out += "\n  " + hex(addr) + ": " + std::to_string(block->requested) + " bytes (block " +
           std::to_string(block->size) + ", stream " + std::to_string(block->stream) + ")";
    ++shown;
  }
  return out;
}

}  // namespace hipdnn_ep
