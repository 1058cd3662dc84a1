// Process-wide device memory figures, per (backend, device ordinal): what the caching allocators of
// every state on that device hold now and held at most at once. Each state's own figures
// (hipdnn_ep_memory_stats) cannot give the peak of a process with several states (an EP holds one
// for its allocator and one per concurrent run): their peaks came at different times.
#pragma once

#include <atomic>
#include <cstdint>

namespace hipdnn_ep {

class DeviceMemoryTotals {
 public:
  void add_in_use(uint64_t bytes) { raise(in_use_, peak_in_use_, bytes); }
  void sub_in_use(uint64_t bytes) { in_use_.fetch_sub(bytes, std::memory_order_relaxed); }
  void add_reserved(uint64_t bytes) { raise(reserved_, peak_reserved_, bytes); }
  void sub_reserved(uint64_t bytes) { reserved_.fetch_sub(bytes, std::memory_order_relaxed); }
  void add_state() { states_.fetch_add(1, std::memory_order_relaxed); }
  void remove_state() { states_.fetch_sub(1, std::memory_order_relaxed); }

  uint64_t in_use() const { return in_use_.load(std::memory_order_relaxed); }
  uint64_t peak_in_use() const { return peak_in_use_.load(std::memory_order_relaxed); }
  uint64_t reserved() const { return reserved_.load(std::memory_order_relaxed); }
  uint64_t peak_reserved() const { return peak_reserved_.load(std::memory_order_relaxed); }
  uint64_t states() const { return states_.load(std::memory_order_relaxed); }

 private:
  static void raise(std::atomic<uint64_t>& value, std::atomic<uint64_t>& peak, uint64_t bytes) {
    const uint64_t now = value.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    uint64_t seen = peak.load(std::memory_order_relaxed);
    while (now > seen && !peak.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
    }
  }

  std::atomic<uint64_t> in_use_{0}, peak_in_use_{0}, reserved_{0}, peak_reserved_{0}, states_{0};
};

// The totals of one device; created on first use and kept for the life of the process (the
// reference stays valid).
DeviceMemoryTotals& device_memory_totals(int32_t backend, int32_t device_ordinal);

}  // namespace hipdnn_ep
