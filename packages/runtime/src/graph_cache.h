// Graph capture and replay of compiled programs on the GPU backends.
//
// Launching a program's kernels one by one from the host costs more than the kernels themselves
// on small inputs. A program run a second time with the same input shapes and weight pointers is
// captured into a graph (hipStreamBeginCapture ... EndCapture) and, from then on, replayed with
// one graph launch:
//   * the graph owns everything its kernels touch: a staging buffer per graph input (each run
//     copies its inputs there first), the output buffers (each run copies them into the memory
//     the host provides, after the launch), its own pool of intermediates and host scratch, and
//     every temporary block a kernel took during the capture (the allocator holds them);
//   * except an output the host places on a graph input's memory (a KV cache bound as both past
//     and present, updated in place): seen in the run before the capture, that input is used
//     where it is and the output written there, so a decode step copies no cache; a replay needs
//     the input at the same address (part of the match) and the host to place the output there
//     again (checked before the launch; else the run is made without the graph);
//   * a program whose run reads device data on the host (hipdnn_ep_memcpy DEVICE_TO_HOST) cannot
//     be captured: the capture is abandoned, the run made without a graph, and the program is
//     never tried again on that state (GraphStats::last_uncaptured says why). Kernels that check
//     their data (gather, integer division, the LLM kernels) do not wait: they record a failure
//     on the device, reported at the run's wait, so they are captured like any other;
//   * a state holds at most graph_cache_size graphs, least recently used evicted; evicted
//     graphs are freed at the next hipdnn_ep_synchronize, the rest with the state.
// The host code of a program only depends on its input shapes (and weight pointers), which is
// what makes a replay equal to a run; data-dependent host work is what refuses the capture.
#pragma once

#include <cstdint>
#include <string>

#include "runtime_internal.h"

struct hipdnn_ep_artifact;

namespace hipdnn_ep {

struct GraphCache;     // the graphs of one state (gpu/gpu_graph.hip)
struct CapturedGraph;  // one of them
struct GraphCacheDeleter {
  void operator()(GraphCache* cache) const;
};

struct GraphStats {
  uint64_t captures = 0;
  uint64_t replays = 0;
  uint64_t uncaptured_runs = 0;
  uint64_t evictions = 0;
  std::string last_uncaptured;
};

// Runs artifact from a graph when it can. Returns true when it did (the run's status in
// *status; outputs filled like a run's, from the host's allocator or hipdnn_ep_malloc), false
// when the caller runs the program itself (the reason counted in state->graph_stats).
// Called with the state marked running and the inputs validated.
bool graph_run(hipdnn_ep_artifact* artifact, hipdnn_ep_state_t* state, const hipdnn_ep_tensor_ref_t* inputs,
               hipdnn_ep_tensor_ref_t* outputs, int32_t* status);
// After a run made without a graph that succeeded (graph_run returned false): notes the outputs the
// host placed on a graph input's memory (a KV cache bound as both past and present), which a capture
// of the same shapes then writes in place instead of staging the input and copying the output.
void graph_note_run(hipdnn_ep_state_t* state, const hipdnn_ep_tensor_ref_t* inputs, size_t n_graph_inputs,
                    const hipdnn_ep_tensor_ref_t* outputs, size_t n_outputs);
// During a capture: output index of the captured program, in memory the graph owns (or, written in
// place, the graph input's memory the host placed it on).
int32_t graph_output_alloc(hipdnn_ep_state_t* state, hipdnn_ep_tensor_ref_t* outputs, int32_t index, uint64_t size);
// During a capture: a copy the graph can hold (device to device, or host scratch to device),
// else the capture is refused.
int32_t graph_capture_copy(hipdnn_ep_state_t* state, void* dst, const void* src, uint64_t size, int32_t kind);
// After the device was synchronized: frees evicted graphs.
void graph_release_retired(hipdnn_ep_state_t* state);
// Graphs the state holds now.
uint64_t graph_count(const hipdnn_ep_state_t* state);

}  // namespace hipdnn_ep
