#include "device_memory.h"

#include <map>
#include <memory>
#include <mutex>
#include <utility>

namespace hipdnn_ep {

DeviceMemoryTotals& device_memory_totals(int32_t backend, int32_t device_ordinal) {
  static std::mutex mu;
  // Never destroyed: states may outlive static destruction at process exit.
  static auto* devices = new std::map<std::pair<int32_t, int32_t>, std::unique_ptr<DeviceMemoryTotals>>();
  std::lock_guard<std::mutex> lock(mu);
  auto& entry = (*devices)[{backend, device_ordinal}];
  if (!entry) entry = std::make_unique<DeviceMemoryTotals>();
  return *entry;
}

}  // namespace hipdnn_ep
