#include "ep_stream.h"

namespace hipdnn_ep {

OwnStreams& OwnStreams::Get() {
  static OwnStreams* streams = new OwnStreams();  // never destroyed: streams may be released during teardown
  return *streams;
}

bool OwnStreams::Contains(uint64_t handle) const {
  std::lock_guard<std::mutex> lock(mu_);
  return live_.count(handle) != 0;
}

void OwnStreams::Add(uint64_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  live_.insert(handle);
}

void OwnStreams::Remove(uint64_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  live_.erase(handle);
}

uint64_t OwnStreamHandle(const OrtApi& ort, OrtSyncStream* stream) {
  if (stream == nullptr) return 0;
  const uint64_t handle = reinterpret_cast<uint64_t>(ort.SyncStream_GetHandle(stream));
  return handle != 0 && OwnStreams::Get().Contains(handle) ? handle : 0;
}

EventPool::~EventPool() {
  for (uint64_t event : free_) (void)rt_->hipdnn_ep_event_destroy(device_->get(), event);
}

uint64_t EventPool::Take() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) {
      const uint64_t event = free_.back();
      free_.pop_back();
      return event;
    }
  }
  uint64_t event = 0;
  rt_->Check("hipdnn_ep_event_create", rt_->hipdnn_ep_event_create(device_->get(), &event));
  return event;
}

void EventPool::Give(uint64_t event) {
  // A recorded event may be taken again at once: the next record replaces what it waits for, and
  // waits already queued on it are not affected (hipdnn_ep_event_record).
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(event);
}

EpSyncStream::EpSyncStream(const ApiPtrs& api, std::shared_ptr<RuntimeState> device, std::shared_ptr<RuntimeApi> rt)
    : OrtSyncStreamImpl{}, api_(api), device_(std::move(device)), rt_(std::move(rt)),
      events_(std::make_shared<EventPool>(device_, rt_)) {
  ort_version_supported = ORT_API_VERSION;
  Release = ReleaseImpl;
  GetHandle = GetHandleImpl;
  CreateNotification = CreateNotificationImpl;
  Flush = FlushImpl;
  OnSessionRunEnd = OnSessionRunEndImpl;
  rt_->Check("hipdnn_ep_stream_create", rt_->hipdnn_ep_stream_create(device_->get(), &handle_));
  OwnStreams::Get().Add(handle_);
}

EpSyncStream::~EpSyncStream() {
  OwnStreams::Get().Remove(handle_);
  // Waits for the stream's work first; a failure here has nobody to report to.
  (void)rt_->hipdnn_ep_stream_destroy(device_->get(), handle_);
}

void ORT_API_CALL EpSyncStream::ReleaseImpl(OrtSyncStreamImpl* this_ptr) noexcept {
  delete static_cast<EpSyncStream*>(this_ptr);
}

void* ORT_API_CALL EpSyncStream::GetHandleImpl(OrtSyncStreamImpl* this_ptr) noexcept {
  return reinterpret_cast<void*>(static_cast<EpSyncStream*>(this_ptr)->handle_);
}

OrtStatus* ORT_API_CALL EpSyncStream::CreateNotificationImpl(OrtSyncStreamImpl* this_ptr,
                                                             OrtSyncNotificationImpl** notification) noexcept {
  auto* self = static_cast<EpSyncStream*>(this_ptr);
  *notification = nullptr;
  return Guard(self->api_.ort, [&] { *notification = new EpSyncNotification(*self); });
}

OrtStatus* ORT_API_CALL EpSyncStream::FlushImpl(OrtSyncStreamImpl* this_ptr) noexcept {
  auto* self = static_cast<EpSyncStream*>(this_ptr);
  return Guard(self->api_.ort, [&] {
    self->rt_->Check("hipdnn_ep_stream_synchronize",
                     self->rt_->hipdnn_ep_stream_synchronize(self->device_->get(), self->handle_));
  });
}

OrtStatus* ORT_API_CALL EpSyncStream::OnSessionRunEndImpl(OrtSyncStreamImpl*) noexcept {
  return nullptr;  // each Compute has already waited for its own work (compiled_program.cc)
}

EpSyncNotification::EpSyncNotification(const EpSyncStream& stream)
    : OrtSyncNotificationImpl{}, api_(stream.api_), events_(stream.events_), stream_(stream.handle_) {
  ort_version_supported = ORT_API_VERSION;
  Release = ReleaseImpl;
  Activate = ActivateImpl;
  WaitOnDevice = WaitOnDeviceImpl;
  WaitOnHost = WaitOnHostImpl;
  event_ = events_->Take();
}

EpSyncNotification::~EpSyncNotification() { events_->Give(event_); }

void ORT_API_CALL EpSyncNotification::ReleaseImpl(OrtSyncNotificationImpl* this_ptr) noexcept {
  delete static_cast<EpSyncNotification*>(this_ptr);
}

OrtStatus* ORT_API_CALL EpSyncNotification::ActivateImpl(OrtSyncNotificationImpl* this_ptr) noexcept {
  auto* self = static_cast<EpSyncNotification*>(this_ptr);
  return Guard(self->api_.ort, [&] {
    const RuntimeApi& rt = self->events_->rt();
    rt.Check("hipdnn_ep_event_record", rt.hipdnn_ep_event_record(self->events_->state(), self->event_, self->stream_));
  });
}

OrtStatus* ORT_API_CALL EpSyncNotification::WaitOnDeviceImpl(OrtSyncNotificationImpl* this_ptr,
                                                              OrtSyncStream* consumer_stream) noexcept {
  auto* self = static_cast<EpSyncNotification*>(this_ptr);
  return Guard(self->api_.ort, [&] {
    const RuntimeApi& rt = self->events_->rt();
    const uint64_t consumer = OwnStreamHandle(self->api_.ort, consumer_stream);
    if (consumer != 0) {
      rt.Check("hipdnn_ep_stream_wait_event",
               rt.hipdnn_ep_stream_wait_event(self->events_->state(), consumer, self->event_));
    } else {
      // A stream the runtime does not know: wait on the host, which orders everything after.
      rt.Check("hipdnn_ep_event_synchronize", rt.hipdnn_ep_event_synchronize(self->events_->state(), self->event_));
    }
  });
}

OrtStatus* ORT_API_CALL EpSyncNotification::WaitOnHostImpl(OrtSyncNotificationImpl* this_ptr) noexcept {
  auto* self = static_cast<EpSyncNotification*>(this_ptr);
  return Guard(self->api_.ort, [&] {
    const RuntimeApi& rt = self->events_->rt();
    rt.Check("hipdnn_ep_event_synchronize", rt.hipdnn_ep_event_synchronize(self->events_->state(), self->event_));
  });
}

}  // namespace hipdnn_ep
