"""The reference of the vision kernels (conv, pool, batch_norm, activation, conv_transpose, resize,
grid_sample), and the ConvTranspose reference (Resize's and GridSample's: kernel_reference, shared
with the runtime's tests)."""

from __future__ import annotations

import numpy as np
from kernel_reference import grid_sample_ref, resize_ref


class VisionKernels:
    @staticmethod
    def _windows(x, out_spatial, kernel, strides, pads, dilations, fill):
        """x [N, C, *S] padded with `fill`, as [N, C, *out, *kernel] views of each output's window taps."""
        r = len(out_spatial)
        hi = [max(0, (o - 1) * s + (k - 1) * d + 1 - n - p)
              for o, s, k, d, n, p in zip(out_spatial, strides, kernel, dilations, x.shape[2:], pads, strict=True)]
        xp = np.pad(x, [(0, 0), (0, 0)] + [(p, h) for p, h in zip(pads, hi, strict=True)], constant_values=fill)
        taps = np.empty(x.shape[:2] + tuple(out_spatial) + tuple(kernel), x.dtype)
        for o in np.ndindex(*out_spatial):
            for k in np.ndindex(*kernel):
                idx = tuple(oi * s + ki * d for oi, s, ki, d in zip(o, strides, k, dilations, strict=True))
                taps[(slice(None), slice(None)) + o + k] = xp[(slice(None), slice(None)) + idx]
        return taps, r

    def fn_kernel_conv(self, v):
        def run(i, o, ints, f):
            x, wt, b = (a.astype(np.float64) for a in i[:3])
            r = x.ndim - 2
            geo = [int(g) for g in i[3]]
            strides, pads, dilations = geo[:r], geo[r:2 * r], geo[2 * r:]
            taps, _ = self._windows(x, o.shape[2:], wt.shape[2:], strides, pads, dilations, 0.0)
            group = ints[0]
            cg, mg = x.shape[1] // group, wt.shape[0] // group
            outs = []
            for g in range(group):
                t = taps[:, g * cg:(g + 1) * cg]  # [N, cg, *out, *k]
                wg = wt[g * mg:(g + 1) * mg]      # [mg, cg, *k]
                t = np.moveaxis(t, 1, 1 + r)      # [N, *out, cg, *k]
                outs.append(np.tensordot(t, wg, axes=(list(range(1 + r, 2 + 2 * r)), list(range(1, 2 + r)))))
            y = np.concatenate(outs, axis=-1) + b  # [N, *out, M]
            return np.moveaxis(y, -1, 1)
        return self._kernel(v, run)

    def fn_kernel_conv_integer(self, v):
        def run(i, o, ints, f):
            x = i[0].astype(np.float64) - float(i[2].reshape(-1)[0])  # padding (0) is x_zero_point less itself
            wt = i[1].astype(np.float64) - i[3].astype(np.float64).reshape((-1,) + (1,) * (i[1].ndim - 1))
            r = x.ndim - 2
            geo = [int(g) for g in i[4]]
            strides, pads, dilations = geo[:r], geo[r:2 * r], geo[2 * r:]
            taps, _ = self._windows(x, o.shape[2:], wt.shape[2:], strides, pads, dilations, 0.0)
            group = ints[0]
            cg, mg = x.shape[1] // group, wt.shape[0] // group
            outs = []
            for g in range(group):
                t = np.moveaxis(taps[:, g * cg:(g + 1) * cg], 1, 1 + r)
                outs.append(np.tensordot(t, wt[g * mg:(g + 1) * mg],
                                         axes=(list(range(1 + r, 2 + 2 * r)), list(range(1, 2 + r)))))
            y = np.moveaxis(np.concatenate(outs, axis=-1), -1, 1)  # exact: |y| < 2**53
            return y.astype(np.int64).astype(np.uint32).astype(np.int32)
        return self._kernel(v, run)

    def fn_kernel_pool(self, v):
        def run(i, o, ints, f):
            x = i[0].astype(np.float64)
            r = x.ndim - 2
            geo = [int(g) for g in i[1]]
            kernel, strides, pads, ends, dilations = (geo[k * r:(k + 1) * r] for k in range(5))
            taps, _ = self._windows(x, o.shape[2:], kernel, strides, pads, dilations, np.nan)
            axes = tuple(range(2 + r, 2 + 2 * r))
            if self._op("hipdnn_ep_pool_op", ints[0]) == "MAX":
                return np.nanmax(taps, axis=axes)
            if not ints[1]:
                return np.nanmean(taps, axis=axes)
            # count_include_pad: taps inside X and its pads count, ceil_mode's extra ones do not
            ones = np.ones((1, 1) + x.shape[2:])
            inside, _ = self._windows(np.pad(ones, [(0, 0), (0, 0)] + list(zip(pads, ends, strict=True)),
                                             constant_values=1.0), o.shape[2:], kernel, strides,
                                      [0] * r, dilations, 0.0)
            return np.nansum(taps, axis=axes) / inside.sum(axis=axes)
        return self._kernel(v, run)

    def fn_kernel_max_pool_indices(self, v):
        def run(i, outs, ints, f):
            x = i[0].astype(np.float64)
            r = x.ndim - 2
            geo = [int(g) for g in i[1]]
            kernel, strides, pads, _, dilations = (geo[k * r:(k + 1) * r] for k in range(5))
            spatial = x.shape[2:]
            size = int(np.prod(spatial, dtype=np.int64))
            # each position's flat index into X: row-major, or column-major over the spatial dims
            offset = np.arange(size).reshape(spatial[::-1]).transpose() if ints[0] else np.arange(size).reshape(spatial)
            index = np.arange(x.shape[0] * x.shape[1]).reshape(x.shape[:2] + (1,) * r) * size + offset
            out = outs[0].shape[2:]
            taps, _ = self._windows(x, out, kernel, strides, pads, dilations, -np.inf)
            where, _ = self._windows(index.astype(np.float64), out, kernel, strides, pads, dilations, -1.0)
            taps = taps.reshape(taps.shape[:2 + r] + (-1,))
            where = where.reshape(taps.shape)
            first = np.argmax(taps, axis=-1)[..., None]  # the first maximum in window order
            return (np.take_along_axis(taps, first, -1)[..., 0],
                    np.take_along_axis(where, first, -1)[..., 0].astype(np.int64))
        return self._kernel_outputs(v, run)

    def fn_kernel_batch_norm(self, v):
        def run(i, o, ints, f):
            x, scale, b, mean, var = (a.astype(np.float64) for a in i)
            shape = (1, -1) + (1,) * (x.ndim - 2)
            return (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + f[0]) * scale.reshape(shape) \
                + b.reshape(shape)
        return self._kernel(v, run)

    def fn_kernel_activation(self, v):
        def run(i, o, ints, f):
            x = i[0].astype(np.float64)
            a, b = f
            sp = np.logaddexp(0.0, x)
            return {"HARD_SIGMOID": lambda: np.clip(a * x + b, 0, 1),
                    "HARD_SWISH": lambda: x * np.clip(x / 6 + 0.5, 0, 1),
                    "LEAKY_RELU": lambda: np.where(x < 0, a * x, x),
                    "ELU": lambda: np.where(x < 0, a * np.expm1(x), x),
                    "SELU": lambda: b * np.where(x <= 0, a * np.expm1(x), x),
                    "CELU": lambda: np.maximum(0, x) + np.minimum(0, a * np.expm1(x / a)),
                    "SOFTPLUS": lambda: sp,
                    "MISH": lambda: x * np.tanh(sp),
                    "THRESHOLDED_RELU": lambda: np.where(x > a, x, 0.0)}[self._op("hipdnn_ep_activation_op", ints[0])]()
        return self._kernel(v, run)

    def fn_kernel_conv_transpose(self, v):
        def run(i, o, ints, f):
            r = i[0].ndim - 2
            geo = [int(g) for g in i[3]]
            return conv_transpose_ref(i[0], i[1], i[2], geo[:r], geo[r:2 * r], geo[2 * r:], ints[0], o.shape[2:])
        return self._kernel(v, run)

    def fn_kernel_grid_sample(self, v):
        def run(i, o, ints, f):
            return grid_sample_ref(i[0], i[1], *ints)
        return self._kernel(v, run)

    def fn_kernel_resize(self, v):
        def run(i, o, ints, f):
            r = i[0].ndim
            bits = np.array([int(g) for g in i[1]], np.uint32)
            vals = bits.view(np.float32).astype(np.float64)
            scales = [0.0 if bits[d] == 0 else vals[d] for d in range(r)]
            return resize_ref(i[0], ints[0], ints[1], ints[2], ints[3], ints[4], f[0], f[1], scales,
                              vals[r:2 * r], vals[2 * r:], o.shape)
        return self._kernel(v, run)


# ---------------------------------------------------------------- the ConvTranspose reference
# (Resize's and GridSample's are shared with the runtime's tests: packages/abi/reference/kernel_reference.py)


def conv_transpose_ref(x, w, b, strides, pads, dilations, group, out_spatial):
    """ConvTranspose by scattering each kernel tap's contribution (float64 numpy loops over the taps)."""
    x, w, b = (a.astype(np.float64) for a in (x, w, b))
    n, c = x.shape[:2]
    r = x.ndim - 2
    cg, mg = c // group, w.shape[1]
    y = np.zeros((n, mg * group, *out_spatial))
    for g in range(group):
        xg = x[:, g * cg:(g + 1) * cg]
        for k in np.ndindex(*w.shape[2:]):
            wk = w[(slice(g * cg, (g + 1) * cg), slice(None)) + k]  # [cg, mg]
            contrib = np.einsum("nc...,cm->nm...", xg, wk)  # [N, mg, *in]
            src, dst = [], []
            for d in range(r):
                p = np.arange(x.shape[2 + d])
                o = p * strides[d] - pads[d] + k[d] * dilations[d]
                ok = (o >= 0) & (o < out_spatial[d])
                src.append(p[ok])
                dst.append(o[ok])
            ys = y[:, g * mg:(g + 1) * mg]
            ys[(slice(None), slice(None)) + np.ix_(*dst)] += contrib[(slice(None), slice(None)) + np.ix_(*src)]
    return y + b.reshape(1, -1, *([1] * r))
