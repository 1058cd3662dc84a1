// C entry points for streams and events the caller owns, and a copy on a given stream. Used by
// hosts that run the state's work on their own streams (the EP on ONNX Runtime's stream).
#include <string>

#include "error.h"
#include "state.h"

using hipdnn_ep::set_error;

namespace {
using Lock = std::lock_guard<std::mutex>;
}  // namespace

extern "C" int32_t hipdnn_ep_stream_create(hipdnn_ep_state_t* state, uint64_t* out_stream) {
  HIPDNN_EP_REQUIRE(state != nullptr && out_stream != nullptr, HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                    "hipdnn_ep_stream_create: state and out_stream must not be NULL");
  *out_stream = 0;
  return state->device->create_stream(out_stream);
}

extern "C" int32_t hipdnn_ep_stream_destroy(hipdnn_ep_state_t* state, uint64_t stream) {
  HIPDNN_EP_REQUIRE(state != nullptr, HIPDNN_EP_STATUS_INVALID_ARGUMENT, "hipdnn_ep_stream_destroy: state is NULL");
  HIPDNN_EP_REQUIRE(stream != 0, HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                    "hipdnn_ep_stream_destroy: stream 0 is the state's own stream, destroyed with the state; pass "
                    "a stream of hipdnn_ep_stream_create");
  return state->device->destroy_stream(stream);
}

extern "C" int32_t hipdnn_ep_stream_synchronize(hipdnn_ep_state_t* state, uint64_t stream) {
  HIPDNN_EP_REQUIRE(state != nullptr, HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                    "hipdnn_ep_stream_synchronize: state is NULL");
  // Another stream than the state's current one: only a wait, which leaves the state alone, so it
  // holds no lock (the EP's Flush waits on ORT's stream while other threads allocate from the state).
  if (stream != state->stream.load()) return state->device->synchronize_stream(stream);
  std::unique_lock<std::mutex> lock(state->memory_mutex);
  if (stream != state->stream.load()) {  // another thread moved the state meanwhile
    lock.unlock();
    return state->device->synchronize_stream(stream);
  }
  // The state's synchronization. Waiting for this stream covers all of the state's work unless an
  // earlier current stream may still hold some: then wait for the whole device.
  const int32_t status = state->work_elsewhere ? state->device->synchronize() : state->device->synchronize_stream(stream);
  if (status != HIPDNN_EP_STATUS_OK) return status;
  hipdnn_ep::finish_synchronization(state);
  // As at hipdnn_ep_synchronize: a kernel's data check that failed on the device is reported here.
  return state->device->take_data_error();
}

extern "C" int32_t hipdnn_ep_memcpy_on_stream(hipdnn_ep_state_t* state, void* dst, const void* src, uint64_t size,
                                              int32_t kind, uint64_t stream) {
  HIPDNN_EP_REQUIRE(state != nullptr, HIPDNN_EP_STATUS_INVALID_ARGUMENT, "hipdnn_ep_memcpy_on_stream: state is NULL");
  HIPDNN_EP_REQUIRE(kind >= HIPDNN_EP_MEMCPY_KIND_HOST_TO_HOST && kind <= HIPDNN_EP_MEMCPY_KIND_DEVICE_TO_DEVICE,
                    HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                    "hipdnn_ep_memcpy_on_stream: unknown copy kind " + std::to_string(kind));
  HIPDNN_EP_REQUIRE(stream != UINT64_MAX, HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                    "hipdnn_ep_memcpy_on_stream: stream id UINT64_MAX is reserved");
  if (size == 0) return HIPDNN_EP_STATUS_OK;
  HIPDNN_EP_REQUIRE(dst != nullptr && src != nullptr, HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                    "hipdnn_ep_memcpy_on_stream: NULL pointer for a copy of " + std::to_string(size) + " bytes");
  HIPDNN_EP_REQUIRE(state->capture == nullptr, HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                    "hipdnn_ep_memcpy_on_stream: the state is capturing a graph; copy with hipdnn_ep_memcpy");
  if (kind == HIPDNN_EP_MEMCPY_KIND_DEVICE_TO_DEVICE) {
    // Still queued when this returns: until the state synchronizes, its stream counts as one that may
    // hold the state's work (the copy may read or write the state's blocks).
    Lock lock(state->memory_mutex);
    if (stream == state->stream.load()) {
      state->stream_used.store(true);
    } else {
      state->work_elsewhere = true;
    }
  }
  if (int32_t status = state->device->copy(dst, src, size, kind, stream); status != HIPDNN_EP_STATUS_OK) {
    return status;
  }
  // A copy to the host on the state's current stream waited for the state's work, as hipdnn_ep_memcpy's
  // does: bad data a kernel recorded on the device is refused here. On another stream the state's work
  // may still be running, so its record is left for the state's wait.
  const bool to_host = kind == HIPDNN_EP_MEMCPY_KIND_DEVICE_TO_HOST || kind == HIPDNN_EP_MEMCPY_KIND_HOST_TO_HOST;
  if (to_host && stream == state->stream.load()) return state->device->take_data_error();
  return HIPDNN_EP_STATUS_OK;
}

extern "C" int32_t hipdnn_ep_event_create(hipdnn_ep_state_t* state, uint64_t* out_event) {
  HIPDNN_EP_REQUIRE(state != nullptr && out_event != nullptr, HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                    "hipdnn_ep_event_create: state and out_event must not be NULL");
  *out_event = 0;
  return state->device->create_event(out_event);
}

extern "C" int32_t hipdnn_ep_event_record(hipdnn_ep_state_t* state, uint64_t event, uint64_t stream) {
  HIPDNN_EP_REQUIRE(state != nullptr && event != 0, HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                    "hipdnn_ep_event_record: state must not be NULL and event must come from hipdnn_ep_event_create");
  return state->device->record_event(event, stream);
}

extern "C" int32_t hipdnn_ep_stream_wait_event(hipdnn_ep_state_t* state, uint64_t stream, uint64_t event) {
  HIPDNN_EP_REQUIRE(state != nullptr && event != 0, HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                    "hipdnn_ep_stream_wait_event: state must not be NULL and event must come from "
                    "hipdnn_ep_event_create");
  return state->device->stream_wait_event(stream, event);
}

extern "C" int32_t hipdnn_ep_event_synchronize(hipdnn_ep_state_t* state, uint64_t event) {
  HIPDNN_EP_REQUIRE(state != nullptr && event != 0, HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                    "hipdnn_ep_event_synchronize: state must not be NULL and event must come from "
                    "hipdnn_ep_event_create");
  return state->device->synchronize_event(event);
}

extern "C" int32_t hipdnn_ep_event_destroy(hipdnn_ep_state_t* state, uint64_t event) {
  HIPDNN_EP_REQUIRE(state != nullptr && event != 0, HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                    "hipdnn_ep_event_destroy: state must not be NULL and event must come from hipdnn_ep_event_create");
  return state->device->destroy_event(event);
}
