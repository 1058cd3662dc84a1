// Copies between host memory and the runtime's device memory (GPU backends).
#pragma once

#include <memory>

#include "ep_utils.h"
#include "runtime_state.h"

namespace hipdnn_ep {

class EpDataTransfer : public OrtDataTransferImpl {
 public:
  EpDataTransfer(const ApiPtrs& api, std::shared_ptr<RuntimeState> state, std::shared_ptr<RuntimeApi> rt);

 private:
  static void ORT_API_CALL ReleaseImpl(OrtDataTransferImpl* this_ptr) noexcept;
  static bool ORT_API_CALL CanCopyImpl(const OrtDataTransferImpl* this_ptr, const OrtMemoryDevice* src,
                                       const OrtMemoryDevice* dst) noexcept;
  static OrtStatus* ORT_API_CALL CopyTensorsImpl(OrtDataTransferImpl* this_ptr, const OrtValue** src,
                                                 OrtValue** dst, OrtSyncStream** streams, size_t n) noexcept;

  ApiPtrs api_;
  std::shared_ptr<RuntimeState> state_;
  std::shared_ptr<RuntimeApi> rt_;
};

}  // namespace hipdnn_ep
