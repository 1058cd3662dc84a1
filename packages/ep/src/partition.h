// Groups supported nodes into fusable partitions.
#pragma once

#include <cstddef>
#include <vector>

namespace hipdnn_ep {

// Nodes are 0..n-1 in topological order; producers[i] lists the nodes whose
// outputs node i consumes.  Returns groups of supported nodes (each in
// topological order) such that every group is connected and fusing each
// group into one node keeps the graph acyclic: no path leaves a group and
// re-enters it.  Greedy in topological order: a node joins the group of one
// of its supported producers unless a path from that group reaches the node
// through a node outside the group.
std::vector<std::vector<size_t>> GroupSupportedNodes(const std::vector<std::vector<size_t>>& producers,
                                                     const std::vector<bool>& supported);

}  // namespace hipdnn_ep
