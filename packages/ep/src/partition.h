// Groups supported nodes into fusable partitions.
#pragma once

#include <cstddef>
#include <vector>

namespace hipdnn_ep {

// Nodes are 0..n-1 (any order); producers[i] lists the nodes whose outputs
// node i consumes.  Returns groups of supported nodes (each in topological
// order) such that fusing each group into one node keeps the graph acyclic.
//
// Method: a topological order that keeps supported nodes together as long
// as possible (Kahn's algorithm that stays with the kind of node it is
// taking, supported or not, while such a node is ready); each maximal run of
// supported nodes in that order is one group.  A run is contiguous in a
// topological order, so no path can leave it and come back.  Groups need not
// be connected: independent branches compile into one program.
std::vector<std::vector<size_t>> GroupSupportedNodes(const std::vector<std::vector<size_t>>& producers,
                                                     const std::vector<bool>& supported);

}  // namespace hipdnn_ep
