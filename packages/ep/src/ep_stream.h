// ONNX Runtime's streams on the GPU backends: OrtSyncStreamImpl over a stream the runtime creates,
// OrtSyncNotificationImpl over a runtime event. The EP links no CUDA/HIP: every stream and event
// call goes through the runtime's C ABI (hipdnn_ep_stream_* / hipdnn_ep_event_*).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "ep_utils.h"
#include "runtime_state.h"

namespace hipdnn_ep {

// The streams this library created and has not released, process-wide: Compute and the data
// transfer use a stream handle ORT passes only when it is one of these (a handle of another EP
// would mean nothing to the runtime).
class OwnStreams {
 public:
  static OwnStreams& Get();
  bool Contains(uint64_t handle) const;
  void Add(uint64_t handle);
  void Remove(uint64_t handle);

 private:
  mutable std::mutex mu_;
  std::set<uint64_t> live_;
};

// The stream handle of an OrtSyncStream if this library created it, else 0.
uint64_t OwnStreamHandle(const OrtApi& ort, OrtSyncStream* stream);

// Events of one stream's notifications, reused: ORT creates and releases a notification per Run
// for each cross-stream hand-off, and an event from the pool saves creating and destroying one
// each time. Shared by the stream and its notifications (a notification may outlive its stream).
class EventPool {
 public:
  EventPool(std::shared_ptr<RuntimeState> device, std::shared_ptr<RuntimeApi> rt)
      : device_(std::move(device)), rt_(std::move(rt)) {}
  ~EventPool();
  uint64_t Take();
  void Give(uint64_t event);
  hipdnn_ep_state_t* state() const { return device_->get(); }
  const RuntimeApi& rt() const { return *rt_; }

 private:
  std::shared_ptr<RuntimeState> device_;
  std::shared_ptr<RuntimeApi> rt_;
  std::mutex mu_;
  std::vector<uint64_t> free_;
};

class EpSyncStream : public OrtSyncStreamImpl {
 public:
  // Creates a stream on the device of `device` (a state of the factory for that device).
  EpSyncStream(const ApiPtrs& api, std::shared_ptr<RuntimeState> device, std::shared_ptr<RuntimeApi> rt);
  ~EpSyncStream();
  uint64_t handle() const { return handle_; }

 private:
  friend class EpSyncNotification;
  static void ORT_API_CALL ReleaseImpl(OrtSyncStreamImpl* this_ptr) noexcept;
  static void* ORT_API_CALL GetHandleImpl(OrtSyncStreamImpl* this_ptr) noexcept;
  static OrtStatus* ORT_API_CALL CreateNotificationImpl(OrtSyncStreamImpl* this_ptr,
                                                        OrtSyncNotificationImpl** notification) noexcept;
  static OrtStatus* ORT_API_CALL FlushImpl(OrtSyncStreamImpl* this_ptr) noexcept;
  static OrtStatus* ORT_API_CALL OnSessionRunEndImpl(OrtSyncStreamImpl* this_ptr) noexcept;

  ApiPtrs api_;
  std::shared_ptr<RuntimeState> device_;
  std::shared_ptr<RuntimeApi> rt_;
  std::shared_ptr<EventPool> events_;
  uint64_t handle_ = 0;
};

// One event of the runtime: Activate records it on its stream, WaitOnDevice makes the consumer
// stream wait for it, WaitOnHost waits for it on the host.
class EpSyncNotification : public OrtSyncNotificationImpl {
 public:
  explicit EpSyncNotification(const EpSyncStream& stream);
  ~EpSyncNotification();

 private:
  static void ORT_API_CALL ReleaseImpl(OrtSyncNotificationImpl* this_ptr) noexcept;
  static OrtStatus* ORT_API_CALL ActivateImpl(OrtSyncNotificationImpl* this_ptr) noexcept;
  static OrtStatus* ORT_API_CALL WaitOnDeviceImpl(OrtSyncNotificationImpl* this_ptr,
                                                  OrtSyncStream* consumer_stream) noexcept;
  static OrtStatus* ORT_API_CALL WaitOnHostImpl(OrtSyncNotificationImpl* this_ptr) noexcept;

  ApiPtrs api_;
  std::shared_ptr<EventPool> events_;
  uint64_t stream_;
  uint64_t event_ = 0;
};

}  // namespace hipdnn_ep
