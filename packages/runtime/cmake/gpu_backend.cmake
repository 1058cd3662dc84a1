# The GPU backends of the runtime library (included by CMakeLists.txt).
#
# The GPU sources (src/gpu/*.hip, src/kernels/gpu/*.hip) are HIP C++. For
# `cuda` they are compiled by nvcc as CUDA (src/gpu/hip_portability.h maps
# the HIP names), GEMMs go through cuBLASLt, and the CUDA runtime is linked
# statically, so the library needs only the driver (libcuda) and
# libcublasLt.so at run time. For `hip` they are compiled by the HIP
# compiler against the HIP runtime and hipBLASLt. Macros, not functions:
# enable_language() must run in the directory scope.
#
# Options:
#   HIPDNN_EP_CUDA_ARCHITECTURES  nvcc targets (default 90: H100/H200; add e.g. 80 for A100)
#   HIPDNN_EP_HIP_ARCHITECTURES   HIP targets (default gfx1100;gfx1151;gfx942)
#   HIPDNN_EP_CUBLASLT_ROOT       folder with include/cublasLt.h and lib/libcublasLt.so*
#                                 when the CUDA toolkit has no cuBLAS (e.g. the
#                                 nvidia-cublas wheel's nvidia/cu13); found from
#                                 Python's `nvidia` package when left empty.

file(GLOB GPU_SOURCES CONFIGURE_DEPENDS
     ${CMAKE_CURRENT_SOURCE_DIR}/src/gpu/*.hip
     ${CMAKE_CURRENT_SOURCE_DIR}/src/kernels/gpu/*.hip)

macro(hipdnn_ep_add_cuda_backend target)
  set(HIPDNN_EP_CUDA_ARCHITECTURES "90" CACHE STRING "CUDA architectures of the cuda backend")
  set(CMAKE_CUDA_ARCHITECTURES ${HIPDNN_EP_CUDA_ARCHITECTURES})
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  set(HIPDNN_EP_CUBLASLT_ROOT "" CACHE PATH "folder with include/cublasLt.h and lib/libcublasLt.so*")
  set(cublaslt_hints ${HIPDNN_EP_CUBLASLT_ROOT})
  if(NOT HIPDNN_EP_CUBLASLT_ROOT)
    execute_process(
      COMMAND ${Python_EXECUTABLE} -c
        "import nvidia, pathlib; print(';'.join(str(pathlib.Path(p) / 'cu13') for p in nvidia.__path__))"
      OUTPUT_VARIABLE wheel_roots OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    list(APPEND cublaslt_hints ${wheel_roots})
  endif()
  find_path(CUBLASLT_INCLUDE_DIR cublasLt.h
            HINTS ${CUDAToolkit_INCLUDE_DIRS} ${cublaslt_hints} PATH_SUFFIXES include)
  find_library(CUBLASLT_LIBRARY NAMES cublasLt libcublasLt.so.13 libcublasLt.so.12
               HINTS ${CUDAToolkit_LIBRARY_DIR} ${cublaslt_hints} PATH_SUFFIXES lib lib64)
  if(NOT CUBLASLT_INCLUDE_DIR OR NOT CUBLASLT_LIBRARY)
    message(FATAL_ERROR "HIPDNN_EP_BACKENDS has cuda but cuBLASLt was not found (header: ${CUBLASLT_INCLUDE_DIR}, "
                        "library: ${CUBLASLT_LIBRARY}). Install the CUDA toolkit's cuBLAS or `pip install "
                        "nvidia-cublas`, or set HIPDNN_EP_CUBLASLT_ROOT to a folder with include/ and lib/.")
  endif()
  message(STATUS "cuda backend: nvcc ${CMAKE_CUDA_COMPILER_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES}, "
                 "cuBLASLt ${CUBLASLT_LIBRARY}")
  set_source_files_properties(${GPU_SOURCES} PROPERTIES LANGUAGE CUDA)
  target_sources(${target} PRIVATE ${GPU_SOURCES})
  target_include_directories(${target} PRIVATE ${CUBLASLT_INCLUDE_DIR})
  target_compile_definitions(${target} PRIVATE HIPDNN_EP_WITH_CUDA=1)
  set_target_properties(${target} PROPERTIES CUDA_ARCHITECTURES "${HIPDNN_EP_CUDA_ARCHITECTURES}"
                                             CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON
                                             CUDA_RUNTIME_LIBRARY Static)
  # nvcc takes .hip files as CUDA only when told so.
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-x cu --expt-relaxed-constexpr>)
  target_link_libraries(${target} PRIVATE CUDA::cudart_static ${CUBLASLT_LIBRARY})
  get_filename_component(cublaslt_dir ${CUBLASLT_LIBRARY} DIRECTORY)
  # Found again at run time where it was at build time (a wheel or the toolkit).
  set_property(TARGET ${target} APPEND PROPERTY BUILD_RPATH ${cublaslt_dir})
  set_property(TARGET ${target} APPEND PROPERTY INSTALL_RPATH ${cublaslt_dir})
endmacro()

macro(hipdnn_ep_add_hip_backend target)
  set(HIPDNN_EP_HIP_ARCHITECTURES "gfx1100;gfx1151;gfx942" CACHE STRING "HIP architectures of the hip backend")
  set(CMAKE_HIP_ARCHITECTURES ${HIPDNN_EP_HIP_ARCHITECTURES})
  enable_language(HIP)
  find_package(hip REQUIRED)
  find_package(hipblaslt REQUIRED)
  set_source_files_properties(${GPU_SOURCES} PROPERTIES LANGUAGE HIP)
  target_sources(${target} PRIVATE ${GPU_SOURCES})
  target_compile_definitions(${target} PRIVATE HIPDNN_EP_WITH_HIP=1)
  set_target_properties(${target} PROPERTIES HIP_ARCHITECTURES "${HIPDNN_EP_HIP_ARCHITECTURES}")
  target_link_libraries(${target} PRIVATE hip::host roc::hipblaslt)
endmacro()
