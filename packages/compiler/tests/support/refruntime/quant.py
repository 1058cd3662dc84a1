"""The reference of the quantization kernels."""

from __future__ import annotations

import numpy as np


class QuantKernels:
    @staticmethod
    def _expand_scale(x, scale, axis, block):
        """The scale (or zero point) of each element of x: per tensor, per axis or blocked."""
        if scale is None:
            return 0
        if block == 0 and scale.size == 1:
            return scale.reshape(())
        if block == 0:
            return scale.reshape([-1 if d == axis else 1 for d in range(x.ndim)])
        return np.repeat(scale, block, axis=axis).take(np.arange(x.shape[axis]), axis=axis)

    def fn_kernel_quantize_linear(self, v):
        def run(i, o, ints, f):
            axis, block = ints
            scale = self._expand_scale(i[0], i[1], axis, block).astype(np.float32)
            zp = self._expand_scale(i[0], i[2] if len(i) > 2 else None, axis, block)
            q = np.rint(i[0].astype(np.float32) / scale) + np.asarray(zp, np.float32)
            info = np.iinfo(o.dtype)
            return np.clip(q, info.min, info.max)
        return self._kernel(v, run)

    def fn_kernel_dequantize_linear(self, v):
        def run(i, o, ints, f):
            axis, block = ints
            scale = self._expand_scale(i[0], i[1], axis, block).astype(np.float32)
            zp = self._expand_scale(i[0], i[2] if len(i) > 2 else None, axis, block)
            return (i[0].astype(np.int64) - np.asarray(zp, np.int64)).astype(np.float32) * scale
        return self._kernel(v, run)

    def fn_kernel_dynamic_quantize_linear(self, v):
        def run(i, outs, ints, f):
            x = i[0].astype(np.float32)
            lo = np.float32(min(0.0, x.min(initial=0.0)))
            hi = np.float32(max(0.0, x.max(initial=0.0)))
            scale = np.float32(1.0) if hi == lo else np.float32((hi - lo) / np.float32(255))
            zp = np.clip(np.rint(-lo / scale), 0, 255)
            return [np.clip(np.rint(x / scale) + zp, 0, 255), scale, zp]
        return self._kernel_outputs(v, run)

    def fn_kernel_matmul_integer(self, v):
        def run(i, o, ints, f):
            a = i[0].astype(np.int64) - (i[2].astype(np.int64).reshape(-1, 1) if len(i) > 2 and i[2] is not None
                                         else 0)
            b = i[1].astype(np.int64) - (i[3].astype(np.int64).reshape(-1) if len(i) > 3 and i[3] is not None
                                         else 0)
            return (a @ b).astype(np.int64).astype(np.uint32).astype(np.int32)
        return self._kernel(v, run)
