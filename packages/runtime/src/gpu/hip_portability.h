// The GPU code of the runtime is written once against HIP names. Built with
// hipcc/clang for AMD it uses HIP itself; built with nvcc for NVIDIA this
// header maps the HIP names we use onto the CUDA runtime and cuBLASLt.
// Only names the runtime uses are mapped: add one here when a kernel needs it.
// The BLAS names live in hip_blas_portability.h, so that kernel sources need
// only the HIP headers (the HIP compile check has no hipBLASLt).
#pragma once

#if defined(__CUDACC__) && !defined(__HIP__)
#define HIPDNN_EP_PLATFORM_CUDA 1
#include <cuda_fp16.h>
#include <cuda_runtime.h>

// ---------------------------------------------------------------- runtime API
#define hipError_t cudaError_t
#define hipSuccess cudaSuccess
#define hipErrorMemoryAllocation cudaErrorMemoryAllocation
#define hipGetErrorString cudaGetErrorString
#define hipGetErrorName cudaGetErrorName
#define hipGetLastError cudaGetLastError
#define hipPeekAtLastError cudaPeekAtLastError
#define hipGetDeviceCount cudaGetDeviceCount
#define hipSetDevice cudaSetDevice
#define hipGetDevice cudaGetDevice
#define hipDeviceSynchronize cudaDeviceSynchronize
#define hipDeviceProp_t cudaDeviceProp
#define hipGetDeviceProperties cudaGetDeviceProperties
#define hipDeviceGetAttribute cudaDeviceGetAttribute
#define hipDeviceAttributeMultiprocessorCount cudaDevAttrMultiProcessorCount
#define hipMemGetInfo cudaMemGetInfo
#define hipMalloc cudaMalloc
#define hipFree cudaFree
#define hipHostMalloc(ptr, size, flags) cudaHostAlloc((ptr), (size), (flags))
#define hipHostMallocMapped cudaHostAllocMapped
#define hipHostMallocPortable cudaHostAllocPortable
#define hipHostFree cudaFreeHost
#define hipHostGetDevicePointer cudaHostGetDevicePointer
#define hipMemcpyAsync cudaMemcpyAsync
#define hipMemcpy2DAsync cudaMemcpy2DAsync
#define hipMemcpy cudaMemcpy
#define hipMemsetAsync cudaMemsetAsync
#define hipMemcpyKind cudaMemcpyKind
#define hipMemcpyHostToHost cudaMemcpyHostToHost
#define hipMemcpyHostToDevice cudaMemcpyHostToDevice
#define hipMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define hipMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define hipMemcpyDefault cudaMemcpyDefault
#define hipStream_t cudaStream_t
#define hipStreamCreateWithFlags cudaStreamCreateWithFlags
#define hipStreamNonBlocking cudaStreamNonBlocking
#define hipStreamDestroy cudaStreamDestroy
#define hipStreamSynchronize cudaStreamSynchronize
#define hipStreamQuery cudaStreamQuery
#define hipPointerAttribute_t cudaPointerAttributes
#define hipPointerGetAttributes cudaPointerGetAttributes
#define hipMemoryTypeDevice cudaMemoryTypeDevice
#define hipMemoryTypeHost cudaMemoryTypeHost
#define hipMemoryTypeManaged cudaMemoryTypeManaged
#define hipEvent_t cudaEvent_t
#define hipEventCreateWithFlags cudaEventCreateWithFlags
#define hipEventCreate cudaEventCreate
#define hipEventElapsedTime cudaEventElapsedTime
#define hipStreamIsCapturing cudaStreamIsCapturing
#define hipStreamCaptureStatus cudaStreamCaptureStatus
#define hipStreamCaptureStatusNone cudaStreamCaptureStatusNone
#define hipEventDisableTiming cudaEventDisableTiming
#define hipEventRecord cudaEventRecord
#define hipEventDestroy cudaEventDestroy
#define hipEventSynchronize cudaEventSynchronize
#define hipStreamWaitEvent cudaStreamWaitEvent
#define hipGraph_t cudaGraph_t
#define hipGraphExec_t cudaGraphExec_t
#define hipStreamBeginCapture cudaStreamBeginCapture
#define hipStreamEndCapture cudaStreamEndCapture
#define hipStreamCaptureModeRelaxed cudaStreamCaptureModeRelaxed
#define hipGraphInstantiateWithFlags cudaGraphInstantiateWithFlags
#define hipGraphLaunch cudaGraphLaunch
#define hipGraphExecDestroy cudaGraphExecDestroy
#define hipGraphDestroy cudaGraphDestroy


#else  // HIP (AMD, or the HIP compile check)
#define HIPDNN_EP_PLATFORM_HIP 1
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>
#endif
