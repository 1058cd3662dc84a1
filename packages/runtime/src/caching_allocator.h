// Caching device allocator with stream-ordered reuse.
//
// Device memory is taken in segments and carved into blocks (best fit, with
// splitting and coalescing of neighbours). A freed block stays cached:
// reusable at once by allocations on the stream it was freed on, and by every
// stream after synchronize() (the caller has waited for the device by then).
// Not thread-safe by itself: the state serializes calls.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "device.h"
#include "device_memory.h"

namespace hipdnn_ep {

struct AllocatorStats {
  uint64_t bytes_in_use = 0;       // sum of live blocks (rounded sizes)
  uint64_t bytes_reserved = 0;     // sum of segments taken from the device
  uint64_t peak_bytes_in_use = 0;
  uint64_t allocation_count = 0;   // successful allocations so far
  uint64_t live_allocations = 0;
};

class CachingAllocator {
 public:
  // memory_limit 0 means no limit; alignment is a power of two. totals (may be null): the device's
  // process-wide figures, which this allocator's blocks and segments count in while it lives.
  CachingAllocator(Device* device, uint64_t alignment, uint64_t memory_limit, DeviceMemoryTotals* totals = nullptr);
  ~CachingAllocator();  // releases every segment; call leak_report() first
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  int32_t allocate(uint64_t size, uint64_t stream, void** out);
  int32_t free(void* ptr, uint64_t stream);
  // While hold is set (a graph capture), free() keeps a live block allocated and appends it
  // to *hold instead: the captured work uses it on every replay, and the owner of *hold frees
  // it for real later. A block freed during the hold serves a later allocation of the same hold on
  // the same stream (it leaves *hold again): every replay runs the captured stream's work in its
  // captured order, so the block's earlier use is done before its next one starts. A graph then
  // keeps its peak of temporaries, not their sum. nullptr ends holding.
  void set_hold(std::vector<void*>* hold);
  // Blocks freed on any stream become reusable on every stream.
  void mark_streams_synchronized();
  // Returns segments without live blocks to the device; the caller synchronized.
  void release_cached();

  const AllocatorStats& stats() const { return stats_; }
  uint64_t memory_limit() const { return limit_; }
  // One line per live block (at most max_lines, then a count); empty if none.
  std::string leak_report(size_t max_lines) const;

 private:
  struct Segment;
  struct Block {
    uintptr_t addr;
    uint64_t size;
    uint64_t requested;
    uint64_t stream;   // stream it may be reused on; kAnyStream after synchronize
    bool allocated;
    Segment* segment;
    Block* prev;       // neighbours inside the segment, by address
    Block* next;
  };
  struct Segment {
    void* base;
    uint64_t size;
    Block* first;  // lowest block; merges keep the lower block, so it never changes
  };
  struct FreeOrder {  // best fit: by stream, then size, then address
    bool operator()(const Block* a, const Block* b) const;
  };
  static constexpr uint64_t kAnyStream = ~uint64_t{0};

  Block* find_free(uint64_t size, uint64_t stream);
  Block* take_held(uint64_t size, uint64_t stream);
  int32_t grow(uint64_t size, uint64_t stream, Block** out);
  Block* split(Block* block, uint64_t size);
  void merge_with_next(Block* block);
  void coalesce(Block* block);

  Device* device_;
  std::vector<void*>* hold_ = nullptr;
  // Blocks freed during the hold (each also in *hold_) and the stream they were freed on: reusable
  // by the hold's later allocations on that stream.
  std::vector<std::pair<Block*, uint64_t>> held_free_;
  uint64_t alignment_;
  uint64_t limit_;
  AllocatorStats stats_;
  DeviceMemoryTotals* totals_;
  std::set<Block*, FreeOrder> free_;
  std::unordered_map<uintptr_t, Block*> live_;
  std::vector<Segment*> segments_;
};

}  // namespace hipdnn_ep
