#include "ep_data_transfer.h"

#include "ep_stream.h"

namespace hipdnn_ep {

EpDataTransfer::EpDataTransfer(const ApiPtrs& api, std::shared_ptr<RuntimeState> state,
                               std::shared_ptr<RuntimeApi> rt)
    : OrtDataTransferImpl{}, api_(api), state_(std::move(state)), rt_(std::move(rt)) {
  ort_version_supported = ORT_API_VERSION;
  Release = ReleaseImpl;
  CanCopy = CanCopyImpl;
  CopyTensors = CopyTensorsImpl;
}

void ORT_API_CALL EpDataTransfer::ReleaseImpl(OrtDataTransferImpl* this_ptr) noexcept {
  delete static_cast<EpDataTransfer*>(this_ptr);
}

bool ORT_API_CALL EpDataTransfer::CanCopyImpl(const OrtDataTransferImpl* this_ptr, const OrtMemoryDevice* src,
                                              const OrtMemoryDevice* dst) noexcept {
  const auto* self = static_cast<const EpDataTransfer*>(this_ptr);
  auto is_gpu = [&](const OrtMemoryDevice* d) {
    return self->api_.ep.MemoryDevice_GetDeviceType(d) == OrtMemoryInfoDeviceType_GPU;
  };
  return is_gpu(src) || is_gpu(dst);
}

OrtStatus* ORT_API_CALL EpDataTransfer::CopyTensorsImpl(OrtDataTransferImpl* this_ptr, const OrtValue** src,
                                                        OrtValue** dst, OrtSyncStream** streams,
                                                        size_t n) noexcept {
  auto* self = static_cast<EpDataTransfer*>(this_ptr);
  return Guard(self->api_.ort, [&] {
    const OrtApi& ort = self->api_.ort;
    bool queued = false;  // a device-to-device copy is queued on the state's stream; the others have completed
    for (size_t i = 0; i < n; ++i) {
      bool src_gpu = self->api_.ep.MemoryDevice_GetDeviceType(self->api_.ep.Value_GetMemoryDevice(src[i])) ==
                     OrtMemoryInfoDeviceType_GPU;
      bool dst_gpu = self->api_.ep.MemoryDevice_GetDeviceType(self->api_.ep.Value_GetMemoryDevice(dst[i])) ==
                     OrtMemoryInfoDeviceType_GPU;
      int32_t kind = src_gpu ? (dst_gpu ? HIPDNN_EP_MEMCPY_KIND_DEVICE_TO_DEVICE : HIPDNN_EP_MEMCPY_KIND_DEVICE_TO_HOST)
                             : (dst_gpu ? HIPDNN_EP_MEMCPY_KIND_HOST_TO_DEVICE : HIPDNN_EP_MEMCPY_KIND_HOST_TO_HOST);
      const void* s = nullptr;
      void* d = nullptr;
      size_t bytes = 0;
      ThrowIfError(ort, ort.GetTensorData(src[i], &s));
      ThrowIfError(ort, ort.GetTensorMutableData(dst[i], &d));
      ThrowIfError(ort, ort.GetTensorSizeInBytes(src[i], &bytes));
      if (bytes == 0) continue;
      // On ORT's stream when it passes one of ours: queued there, after the work that produced the
      // source, and ORT orders later work through that stream's notifications. Without one the
      // copy completes here.
      const uint64_t stream = OwnStreamHandle(ort, streams != nullptr ? streams[i] : nullptr);
      if (stream != 0) {
        self->rt_->Check("hipdnn_ep_memcpy_on_stream",
                         self->rt_->hipdnn_ep_memcpy_on_stream(self->state_->get(), d, s, bytes, kind, stream));
        continue;
      }
      self->rt_->Check("hipdnn_ep_memcpy", self->rt_->hipdnn_ep_memcpy(self->state_->get(), d, s, bytes, kind));
      queued = queued || kind == HIPDNN_EP_MEMCPY_KIND_DEVICE_TO_DEVICE;
    }
    // Copies that touch host memory return once done (hipdnn_ep_memcpy); only device-to-device
    // ones need the wait before ORT uses the destination.
    if (queued) {
      self->rt_->Check("hipdnn_ep_stream_synchronize", self->rt_->hipdnn_ep_stream_synchronize(self->state_->get(), 0));
    }
  });
}

}  // namespace hipdnn_ep
