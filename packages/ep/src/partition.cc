#include "partition.h"

#include <deque>

namespace hipdnn_ep {

std::vector<std::vector<size_t>> GroupSupportedNodes(const std::vector<std::vector<size_t>>& producers,
                                                     const std::vector<bool>& supported) {
  const size_t n = supported.size();
  std::vector<std::vector<size_t>> consumers(n);
  std::vector<size_t> waiting(n, 0);  // producers not yet placed
  for (size_t i = 0; i < n; ++i) {
    for (size_t p : producers[i]) {
      consumers[p].push_back(i);
      ++waiting[i];
    }
  }
  // ready[1]: supported nodes whose producers are all placed; ready[0]: the others.
  std::deque<size_t> ready[2];
  for (size_t i = 0; i < n; ++i) {
    if (waiting[i] == 0) ready[supported[i]].push_back(i);
  }
  std::vector<std::vector<size_t>> groups;
  bool in_run = false;  // the last placed node was supported
  for (size_t placed = 0; placed < n; ++placed) {
    bool take_supported = ready[in_run].empty() ? !in_run : in_run;
    if (ready[take_supported].empty()) break;  // a cycle: cannot happen in an ONNX graph
    size_t i = ready[take_supported].front();
    ready[take_supported].pop_front();
    if (take_supported) {
      if (!in_run) groups.emplace_back();
      groups.back().push_back(i);
    }
    in_run = take_supported;
    for (size_t c : consumers[i]) {
      if (--waiting[c] == 0) ready[supported[c]].push_back(c);
    }
  }
  return groups;
}

}  // namespace hipdnn_ep
