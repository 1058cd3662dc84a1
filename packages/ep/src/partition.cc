#include "partition.h"

#include <set>

namespace hipdnn_ep {

std::vector<std::vector<size_t>> GroupSupportedNodes(const std::vector<std::vector<size_t>>& producers,
                                                     const std::vector<bool>& supported) {
  const size_t n = supported.size();
  constexpr size_t kNone = static_cast<size_t>(-1);
  std::vector<size_t> group(n, kNone);
  // escaped[i]: groups with a path to node i that passes through (or ends at)
  // a node outside the group.  Node i may not join any of them.
  std::vector<std::set<size_t>> escaped(n);
  std::vector<std::vector<size_t>> groups;

  for (size_t i = 0; i < n; ++i) {
    std::set<size_t> blocked;
    for (size_t p : producers[i]) blocked.insert(escaped[p].begin(), escaped[p].end());
    if (supported[i]) {
      for (size_t p : producers[i]) {
        if (group[p] != kNone && blocked.count(group[p]) == 0) {
          group[i] = group[p];
          break;
        }
      }
      if (group[i] == kNone) {
        group[i] = groups.size();
        groups.emplace_back();
      }
      groups[group[i]].push_back(i);
    }
    escaped[i] = blocked;
    for (size_t p : producers[i]) {
      if (group[p] != kNone && group[p] != group[i]) escaped[i].insert(group[p]);
    }
  }
  return groups;
}

}  // namespace hipdnn_ep
