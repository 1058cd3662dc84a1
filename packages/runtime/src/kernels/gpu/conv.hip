// GPU convolution (ONNX Conv, 1 to 3 spatial dims, groups, strides, pads, dilations) as an implicit
// GEMM: per image and group, Y[M/group, positions] = W[M/group, K] x columns[K, positions] with
// K = C/group * kernel volume, where the column matrix is never stored: each 64 x 64 output tile
// stages 16-deep slices of W and of the input patches (zero outside X) in shared memory, and each
// of the 256 threads accumulates a 4 x 4 block in float registers. Threads of a row of the tile take
// neighbouring output positions, so the patch loads and the output stores are coalesced.
// conv_integer (ONNX ConvInteger) computes one output element per thread (grid-stride), accumulating
// (x - x_zero_point) * (w - w_zero_point) in wrapping int32 (uint32 arithmetic), as the CPU backend.
#include <cstdint>
#include <string>

#include "gpu/gpu_device.h"
#include "kernels/gpu/gpu_common.h"
#include "kernels/gpu/gpu_kernels.h"
#include "kernels/validate.h"

namespace hipdnn_ep::kernels::gpu {
namespace {

constexpr int kTileM = 64;  // output maps per tile
constexpr int kTileP = 64;  // output positions per tile
constexpr int kTileK = 16;  // reduction depth staged per step
constexpr int kConvThreads = 256;

// One convolution's geometry with the spatial dims padded to three (missing ones of size 1).
struct ConvParams {
  int64_t channels, maps, group, cg, mg, k, positions, in_size;
  int64_t in[3], out[3], kernel[3], stride[3], pad[3], dilation[3];
};

template <typename T>
__global__ void __launch_bounds__(kConvThreads)
    conv_implicit_gemm_kernel(const T* x, const T* w, const T* bias, T* y, ConvParams c, int64_t images) {
  __shared__ float w_tile[kTileK][kTileM];
  __shared__ float x_tile[kTileK][kTileP];
  const int tx = threadIdx.x % 16;  // output positions p0 + tx + 16 j
  const int ty = threadIdx.x / 16;  // output maps m0 + ty + 16 i
  const int64_t m0 = int64_t{blockIdx.y} * kTileM;
  const int64_t p0 = int64_t{blockIdx.x} * kTileP;
  for (int64_t z = blockIdx.z; z < images * c.group; z += gridDim.z) {
    const int64_t n = z / c.group;
    const int64_t g = z % c.group;
    const T* xg = x + (n * c.channels + g * c.cg) * c.in_size;
    const T* wg = w + g * c.mg * c.k;
    float acc[4][4] = {};
    for (int64_t k0 = 0; k0 < c.k; k0 += kTileK) {
      for (int i = threadIdx.x; i < kTileK * kTileM; i += kConvThreads) {
        const int kk = i % kTileK;  // neighbouring threads read neighbouring weights of one map
        const int mm = i / kTileK;
        const int64_t m = m0 + mm;
        const int64_t k = k0 + kk;
        w_tile[kk][mm] = m < c.mg && k < c.k ? load(wg, m * c.k + k) : 0.0f;
      }
      for (int i = threadIdx.x; i < kTileK * kTileP; i += kConvThreads) {
        const int pp = i % kTileP;  // neighbouring threads take neighbouring output positions
        const int kk = i / kTileP;
        const int64_t p = p0 + pp;
        const int64_t k = k0 + kk;
        float v = 0.0f;
        if (p < c.positions && k < c.k) {
          int64_t t = k;
          const int64_t kw = t % c.kernel[2];
          t /= c.kernel[2];
          const int64_t kh = t % c.kernel[1];
          t /= c.kernel[1];
          const int64_t kd = t % c.kernel[0];
          const int64_t ch = t / c.kernel[0];
          const int64_t ow = p % c.out[2];
          const int64_t oh = (p / c.out[2]) % c.out[1];
          const int64_t od = p / (c.out[2] * c.out[1]);
          const int64_t id = od * c.stride[0] - c.pad[0] + kd * c.dilation[0];
          const int64_t ih = oh * c.stride[1] - c.pad[1] + kh * c.dilation[1];
          const int64_t iw = ow * c.stride[2] - c.pad[2] + kw * c.dilation[2];
          if (id >= 0 && id < c.in[0] && ih >= 0 && ih < c.in[1] && iw >= 0 && iw < c.in[2]) {
            v = load(xg, ch * c.in_size + (id * c.in[1] + ih) * c.in[2] + iw);
          }
        }
        x_tile[kk][pp] = v;
      }
      __syncthreads();
#pragma unroll
      for (int kk = 0; kk < kTileK; ++kk) {
        float a[4], b[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) a[i] = w_tile[kk][ty + 16 * i];
#pragma unroll
        for (int j = 0; j < 4; ++j) b[j] = x_tile[kk][tx + 16 * j];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
#pragma unroll
          for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
      }
      __syncthreads();
    }
    T* yg = y + (n * c.maps + g * c.mg) * c.positions;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int64_t m = m0 + ty + 16 * i;
      if (m >= c.mg) continue;
      const float b = load(bias, g * c.mg + m);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int64_t p = p0 + tx + 16 * j;
        if (p < c.positions) store(yg, m * c.positions + p, acc[i][j] + b);
      }
    }
  }
}

template <typename X, typename W>
__global__ void conv_integer_kernel(const X* x, const W* w, const X* zx, const W* zw, int64_t zw_n, int32_t* y,
                                    ConvParams c, int64_t total) {
  HIPDNN_EP_GRID_STRIDE(idx, total) {
    const int64_t p = idx % c.positions;
    const int64_t m = (idx / c.positions) % c.maps;
    const int64_t n = idx / (c.positions * c.maps);
    const int64_t g = m / c.mg;
    const int32_t zxv = static_cast<int32_t>(*zx);
    const int32_t zwv = static_cast<int32_t>(zw[zw_n == 1 ? 0 : m]);
    const int64_t ow = p % c.out[2];
    const int64_t oh = (p / c.out[2]) % c.out[1];
    const int64_t od = p / (c.out[2] * c.out[1]);
    const X* xg = x + (n * c.channels + g * c.cg) * c.in_size;
    const W* wm = w + m * c.k;
    uint32_t acc = 0;  // wraps like int32
    for (int64_t ch = 0; ch < c.cg; ++ch) {
      for (int64_t kd = 0; kd < c.kernel[0]; ++kd) {
        const int64_t id = od * c.stride[0] - c.pad[0] + kd * c.dilation[0];
        if (id < 0 || id >= c.in[0]) continue;
        for (int64_t kh = 0; kh < c.kernel[1]; ++kh) {
          const int64_t ih = oh * c.stride[1] - c.pad[1] + kh * c.dilation[1];
          if (ih < 0 || ih >= c.in[1]) continue;
          const X* row = xg + ch * c.in_size + (id * c.in[1] + ih) * c.in[2];
          const W* wrow = wm + ((ch * c.kernel[0] + kd) * c.kernel[1] + kh) * c.kernel[2];
          for (int64_t kw = 0; kw < c.kernel[2]; ++kw) {
            const int64_t iw = ow * c.stride[2] - c.pad[2] + kw * c.dilation[2];
            if (iw < 0 || iw >= c.in[2]) continue;
            acc += static_cast<uint32_t>(static_cast<int32_t>(row[iw]) - zxv) *
                   static_cast<uint32_t>(static_cast<int32_t>(wrow[kw]) - zwv);
          }
        }
      }
    }
    y[idx] = static_cast<int32_t>(acc);
  }
}

template <typename Fn>
decltype(auto) dispatch_int8_gpu(int32_t dtype, const char* what, Fn&& fn) {
  switch (dtype) {
    case HIPDNN_EP_DTYPE_INT8: return fn(TypeTag<int8_t>{});
    case HIPDNN_EP_DTYPE_UINT8: return fn(TypeTag<uint8_t>{});
    default: break;
  }
  fail(HIPDNN_EP_STATUS_UNSUPPORTED, std::string(what) + " does not support dtype " + dtype_name(dtype));
}

// The geometry of a conv or conv_integer call (geometry: its INT64 host input).
ConvParams conv_params(const hipdnn_ep_kernel_args_t& args, const hipdnn_ep_tensor_ref_t& geometry) {
  const Dims x = dims_of(args.inputs[0]);
  const Dims w = dims_of(args.inputs[1]);
  const Dims y = dims_of(args.outputs[0]);
  const auto* geo = static_cast<const int64_t*>(geometry.data);  // host memory
  const size_t r = x.size() - 2;
  ConvParams c{};
  c.channels = x[1];
  c.maps = w[0];
  c.group = args.int_attrs[HIPDNN_EP_KERNEL_CONV_INT_ATTR_GROUP];
  c.cg = c.channels / c.group;
  c.mg = c.maps / c.group;
  for (int d = 0; d < 3; ++d) {
    c.in[d] = c.out[d] = c.kernel[d] = c.stride[d] = c.dilation[d] = 1;
    c.pad[d] = 0;
  }
  const size_t first = 3 - r;  // right-align: a 1-D conv is [1, 1, W]
  for (size_t d = 0; d < r; ++d) {
    c.in[first + d] = x[2 + d];
    c.out[first + d] = y[2 + d];
    c.kernel[first + d] = w[2 + d];
    c.stride[first + d] = geo[d];
    c.pad[first + d] = geo[r + d];
    c.dilation[first + d] = geo[2 * r + d];
  }
  c.k = c.cg * c.kernel[0] * c.kernel[1] * c.kernel[2];
  c.positions = c.out[0] * c.out[1] * c.out[2];
  c.in_size = c.in[0] * c.in[1] * c.in[2];
  return c;
}

}  // namespace

void conv(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  const Dims x = dims_of(args.inputs[0]);
  const ConvParams c = conv_params(args, args.inputs[3]);
  const int64_t images = x[0];
  if (images == 0 || c.maps == 0 || c.positions == 0) return;
  const int64_t tiles_p = (c.positions + kTileP - 1) / kTileP;
  const int64_t tiles_m = (c.mg + kTileM - 1) / kTileM;
  if (tiles_p > 0x7fffffff || tiles_m > 65535) {
    fail(HIPDNN_EP_STATUS_UNSUPPORTED, "conv: " + std::to_string(c.positions) + " output positions and " +
                                           std::to_string(c.mg) + " maps per group exceed the GPU grid");
  }
  const int64_t z = images * c.group;
  const dim3 grid(static_cast<unsigned>(tiles_p), static_cast<unsigned>(tiles_m),
                  static_cast<unsigned>(z < 65535 ? z : 65535));
  const hipStream_t stream = current_stream(state);
  dispatch_float_gpu(args.inputs[0].dtype, "conv", [&](auto tag) {
    using T = typename decltype(tag)::type;
    conv_implicit_gemm_kernel<T><<<grid, kConvThreads, 0, stream>>>(
        static_cast<const T*>(args.inputs[0].data), static_cast<const T*>(args.inputs[1].data),
        static_cast<const T*>(args.inputs[2].data), static_cast<T*>(args.outputs[0].data), c, images);
  });
  check_launch("conv");
}

void conv_integer(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  const ConvParams c = conv_params(args, args.inputs[4]);
  const int64_t total = dims_of(args.inputs[0])[0] * c.maps * c.positions;
  if (total == 0) return;
  const int64_t zw_n = element_count(args.inputs[3]);
  const hipStream_t stream = current_stream(state);
  dispatch_int8_gpu(args.inputs[0].dtype, "conv_integer", [&](auto xtag) {
    using X = typename decltype(xtag)::type;
    dispatch_int8_gpu(args.inputs[1].dtype, "conv_integer", [&](auto wtag) {
      using W = typename decltype(wtag)::type;
      conv_integer_kernel<X, W><<<grid_for(total), kBlock, 0, stream>>>(
          static_cast<const X*>(args.inputs[0].data), static_cast<const W*>(args.inputs[1].data),
          static_cast<const X*>(args.inputs[2].data), static_cast<const W*>(args.inputs[3].data), zw_n,
          static_cast<int32_t*>(args.outputs[0].data), c, total);
    });
  });
  check_launch("conv_integer");
}

// ConvTranspose, gather form: one thread per output element sums, over the input channels of its
// group and the kernel taps, the input positions p with o = p * stride - pad + k * dilation.
namespace {

struct ConvTransposeParams {
  int64_t channels, maps, cg, mg, in_size, positions;
  int64_t in[3], out[3], kernel[3], stride[3], pad[3], dilation[3];
};

__device__ inline bool transpose_source(int64_t o, int64_t k, int64_t stride, int64_t pad, int64_t dilation,
                                        int64_t in, int64_t* p) {
  const int64_t t = o + pad - k * dilation;
  if (t < 0 || t % stride != 0) return false;
  *p = t / stride;
  return *p < in;
}

template <typename T>
__global__ void conv_transpose_kernel(const T* x, const T* w, const T* bias, T* y, ConvTransposeParams c, int64_t total) {
  const int64_t kvol = c.kernel[0] * c.kernel[1] * c.kernel[2];
  HIPDNN_EP_GRID_STRIDE(e, total) {
    const int64_t pos = e % c.positions;
    const int64_t m = (e / c.positions) % c.maps;
    const int64_t n = e / (c.positions * c.maps);
    const int64_t g = m / c.mg;
    const int64_t ml = m % c.mg;
    const int64_t o[3] = {pos / (c.out[1] * c.out[2]), (pos / c.out[2]) % c.out[1], pos % c.out[2]};
    float acc = load(bias, m);
    for (int64_t kd = 0; kd < c.kernel[0]; ++kd) {
      int64_t pd;
      if (!transpose_source(o[0], kd, c.stride[0], c.pad[0], c.dilation[0], c.in[0], &pd)) continue;
      for (int64_t kh = 0; kh < c.kernel[1]; ++kh) {
        int64_t ph;
        if (!transpose_source(o[1], kh, c.stride[1], c.pad[1], c.dilation[1], c.in[1], &ph)) continue;
        for (int64_t kw = 0; kw < c.kernel[2]; ++kw) {
          int64_t pw;
          if (!transpose_source(o[2], kw, c.stride[2], c.pad[2], c.dilation[2], c.in[2], &pw)) continue;
          const int64_t xoff = (n * c.channels + g * c.cg) * c.in_size + (pd * c.in[1] + ph) * c.in[2] + pw;
          const int64_t woff = ((g * c.cg) * c.mg + ml) * kvol + (kd * c.kernel[1] + kh) * c.kernel[2] + kw;
          for (int64_t ch = 0; ch < c.cg; ++ch) {
            acc = fmaf(load(x, xoff + ch * c.in_size), load(w, woff + ch * c.mg * kvol), acc);
          }
        }
      }
    }
    store(y, e, acc);
  }
}

}  // namespace

void conv_transpose(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  const Dims x = dims_of(args.inputs[0]);
  const Dims w = dims_of(args.inputs[1]);
  const Dims y = dims_of(args.outputs[0]);
  const auto* geo = static_cast<const int64_t*>(args.inputs[3].data);  // host memory
  const size_t r = x.size() - 2;
  ConvTransposeParams c{};
  const int64_t group = args.int_attrs[HIPDNN_EP_KERNEL_CONV_TRANSPOSE_INT_ATTR_GROUP];
  c.channels = x[1];
  c.cg = x[1] / group;
  c.mg = w[1];
  c.maps = c.mg * group;
  for (int d = 0; d < 3; ++d) {
    c.in[d] = c.out[d] = c.kernel[d] = c.stride[d] = c.dilation[d] = 1;
    c.pad[d] = 0;
  }
  const size_t first = 3 - r;
  for (size_t d = 0; d < r; ++d) {
    c.in[first + d] = x[2 + d];
    c.out[first + d] = y[2 + d];
    c.kernel[first + d] = w[2 + d];
    c.stride[first + d] = geo[d];
    c.pad[first + d] = geo[r + d];
    c.dilation[first + d] = geo[2 * r + d];
  }
  c.in_size = c.in[0] * c.in[1] * c.in[2];
  c.positions = c.out[0] * c.out[1] * c.out[2];
  const int64_t total = element_count(args.outputs[0]);
  if (total == 0) return;
  const hipStream_t stream = current_stream(state);
  dispatch_float_gpu(args.inputs[0].dtype, "conv_transpose", [&](auto tag) {
    using T = typename decltype(tag)::type;
    conv_transpose_kernel<T><<<grid_for(total), kBlock, 0, stream>>>(
        static_cast<const T*>(args.inputs[0].data), static_cast<const T*>(args.inputs[1].data),
        static_cast<const T*>(args.inputs[2].data), static_cast<T*>(args.outputs[0].data), c, total);
  });
  check_launch("conv_transpose");
}

}  // namespace hipdnn_ep::kernels::gpu
