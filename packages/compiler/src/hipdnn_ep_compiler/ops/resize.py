"""Resize and GridSample: the sampling ops of the vision family (ops/vision.py), one kernel each (ABI 1.3).

Resize (opset 13 to 19) maps each output coordinate to an input coordinate per axis and rounds
(nearest) or interpolates (linear, cubic) there; its scales and roi are constants, its sizes may be
computed on the host. GridSample (opset 16 and 20 names) samples X at the grid's coordinates, on 1 to 3
spatial dims.
"""

from __future__ import annotations

import numpy as np

from .. import checks
from .. import ir as hir
from .. import symbolic as sym
from ..errors import ModelError
from .node import Node, replace
from .registry import Kernel, OpDef, Param, register, register_kernel
from .vision import _spatial_rank

# ---------------------------------------------------------------- Resize
# One kernel for every mode: per axis, the output coordinate maps to an input coordinate (the
# coordinate transformation mode, with that axis' scale and roi), which nearest rounds and linear and
# cubic interpolate from their taps (antialias widens the taps of a downscaled axis). The kernel gets
# per axis the float32 bits of the scale (0: output size / input size, computed by the kernel, as
# onnxruntime does for sizes) and of the roi's start and end.

RESIZE = register_kernel(Kernel("resize", "kernel_resize",
                                ("mode", "coordinate_mode", "nearest_mode", "exclude_outside", "antialias"),
                                ("cubic_coeff_a", "extrapolation_value"), params=(Param("geometry", 1),)))

_RESIZE_MODES = {"nearest": 0, "linear": 1, "cubic": 2}
_COORD_MODES = {"half_pixel": 0, "half_pixel_symmetric": 1, "pytorch_half_pixel": 2, "align_corners": 3,
                "asymmetric": 4, "tf_crop_and_resize": 6}  # 5: tf_half_pixel_for_nn (opset 11 only)
_NEAREST_MODES = {"round_prefer_floor": 0, "round_prefer_ceil": 1, "floor": 2, "ceil": 3}  # 4: Resize-10's


def _f32_bits(v: float) -> int:
    return int(np.array([v], np.float32).view(np.uint32)[0])


def _present(o: Node, i: int) -> bool:
    """Input i is given and not an empty tensor (opset 11 to 12 pass "" or an empty roi/scales)."""
    if o.input(i) is None:
        return False
    d = o.dims(i)
    return not (len(d) == 1 and d[0] == 0)


def _float_input(o: Node, i: int, what: str) -> list[float]:
    vals = hir.float_values(o.input(i))
    if vals is None:
        o.fail(f"{what} must be a constant (an initializer or Constant of at most 16 elements)")
    return vals


def _scaled_dim(o: Node, d: sym.Expr, scale: float) -> sym.Expr:
    """floor(d * scale): on a static dim as onnxruntime computes it (the product rounded to float32), on a
    dim known only at run time exactly (floor(d * p / q), scale = p / q), which can be one more than
    onnxruntime's where d * scale is within float32 rounding below an integer."""
    if isinstance(d, int):
        return int(np.floor(np.float32(d) * np.float32(scale)))
    if float(scale).is_integer():
        return sym.mul(d, int(scale))
    from fractions import Fraction

    f = Fraction(float(np.float32(scale)))
    if f.denominator > 2**40 or f.numerator > 2**30:
        o.fail(f"scale {scale} on a dim known only at run time is not supported (a static dim or a simpler scale is)")
    return sym.div(sym.mul(d, f.numerator), f.denominator)


def _resize(o: Node) -> None:
    x = o.dims(0)
    rank = len(x)
    if rank < 1 or rank > 8:
        o.fail(f"{o.entry.op_type} of rank {rank} is not supported (1 to 8 is)")
    mode = hir.get_str(o.op, "onnx.mode", "nearest")
    if mode not in _RESIZE_MODES:
        raise ModelError(f"{o.where}: mode '{mode}' is not one of nearest, linear, cubic")
    coord = hir.get_str(o.op, "onnx.coordinate_transformation_mode", "half_pixel")
    nearest = hir.get_str(o.op, "onnx.nearest_mode", "round_prefer_floor")
    if coord not in _COORD_MODES:
        raise ModelError(f"{o.where}: coordinate_transformation_mode '{coord}' is not supported")
    if nearest not in _NEAREST_MODES:
        raise ModelError(f"{o.where}: nearest_mode '{nearest}' is not supported")
    axes = list(range(rank))
    if o.attr_ints("axes") is not None:
        axes = [norm_axis_resize(o, a, rank) for a in o.attr_ints("axes")]
        if len(set(axes)) != len(axes):
            raise ModelError(f"{o.where}: axes {o.attr_ints('axes')} repeat an axis")
    policy = hir.get_str(o.op, "onnx.keep_aspect_ratio_policy", "stretch")
    if policy not in ("stretch", "not_larger", "not_smaller"):
        raise ModelError(f"{o.where}: keep_aspect_ratio_policy '{policy}' is not supported")
    scales_i, sizes_i = 2, 3
    outs = list(x)
    scale_bits = [_f32_bits(1.0)] * rank
    if _present(o, scales_i):
        if _present(o, sizes_i):
            raise ModelError(f"{o.where}: only one of scales and sizes may be given")
        scales = _float_input(o, scales_i, "scales")
    else:
        scales = None
    if scales is not None:
        if len(scales) != len(axes):
            raise ModelError(f"{o.where}: scales has {len(scales)} entries for {len(axes)} axes")
        for a, s in zip(axes, scales, strict=True):
            if not (s > 0 and np.isfinite(s)):
                raise ModelError(f"{o.where}: scale {s} must be finite and > 0")
            outs[a] = _scaled_dim(o, x[a], s)
            scale_bits[a] = _f32_bits(s)
    elif _present(o, sizes_i):
        sizes = o.host(sizes_i)
        if sizes is None:
            o.fail("sizes must be computable on the host (a constant or a shape computation)")
        if len(sizes) != len(axes):
            raise ModelError(f"{o.where}: sizes has {len(sizes)} entries for {len(axes)} axes")
        if policy == "stretch":
            for a, s in zip(axes, sizes, strict=True):
                if isinstance(s, int) and s < 0:
                    raise ModelError(f"{o.where}: sizes {sizes} must be >= 0")
                outs[a] = s
                scale_bits[a] = 0  # the kernel takes output / input
        else:
            if not all(isinstance(v, int) for v in sizes) or not all(isinstance(x[a], int) for a in axes):
                o.fail(f"keep_aspect_ratio_policy {policy} needs static sizes and input dims")
            ratios = [np.float32(s) / np.float32(x[a]) for a, s in zip(axes, sizes, strict=True)]
            scale = min(ratios) if policy == "not_larger" else max(ratios)
            for a in axes:
                outs[a] = int(np.round(np.float32(scale) * np.float32(x[a])))
                scale_bits[a] = _f32_bits(float(scale))
    else:
        raise ModelError(f"{o.where}: one of scales and sizes must be given")
    roi_start, roi_end = [_f32_bits(0.0)] * rank, [_f32_bits(1.0)] * rank
    if coord == "tf_crop_and_resize":
        if o.input(1) is None:
            raise ModelError(f"{o.where}: tf_crop_and_resize needs roi")
        roi = _float_input(o, 1, "roi")
        if len(roi) != 2 * len(axes):
            raise ModelError(f"{o.where}: roi has {len(roi)} entries; it needs 2 per axis ({2 * len(axes)})")
        for k, a in enumerate(axes):
            roi_start[a], roi_end[a] = _f32_bits(roi[k]), _f32_bits(roi[len(axes) + k])
    antialias = o.attr_int("antialias", 0)
    exclude = o.attr_int("exclude_outside", 0)
    attrs = {"mode": _RESIZE_MODES[mode], "coordinate_mode": _COORD_MODES[coord],
             "nearest_mode": _NEAREST_MODES[nearest], "exclude_outside": int(exclude != 0),
             "antialias": int(antialias != 0), "cubic_coeff_a": o.attr_float("cubic_coeff_a", -0.75),
             "extrapolation_value": o.attr_float("extrapolation_value", 0.0)}
    for a in range(rank):  # an empty input axis has nothing to read from (the kernel checks dims fed at run time)
        if x[a] == 0 and isinstance(outs[a], int) and outs[a] > 0:
            raise ModelError(f"{o.where}: input dim {a} is 0; Resize cannot make {outs[a]} elements of an empty axis")
    attrs["geometry"] = [*scale_bits, *roi_start, *roi_end]
    replace(o, RESIZE, [o.input(0)], attrs, [outs])


def norm_axis_resize(o: Node, axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise ModelError(f"{o.where}: axis {axis} is out of range for rank {rank}")
    return axis % rank


register(OpDef("Resize", "resize", _resize, (RESIZE,)))

# ---------------------------------------------------------------- GridSample

GRID_SAMPLE = register_kernel(Kernel("grid_sample", "kernel_grid_sample", ("mode", "padding_mode", "align_corners"),
                                     arity=(2, 2)))
_GS_MODES = {"bilinear": 0, "linear": 0, "nearest": 1, "bicubic": 2, "cubic": 2}  # opset 16's names, then 20's
_GS_PADDING = {"zeros": 0, "border": 1, "reflection": 2}


def _grid_sample(o: Node) -> None:
    r = _spatial_rank(o, "GridSample")
    x, g = o.dims(0), o.dims(1)
    if len(g) != len(x):
        raise ModelError(f"{o.where}: grid has rank {len(g)}; it must have X's rank {len(x)}")
    if isinstance(g[-1], int) and g[-1] != r:
        raise ModelError(f"{o.where}: grid's last dim is {g[-1]}; it must be X's spatial rank {r}")
    text = checks.Text(g[-1], r)
    o.require("eq", text.values, "grid's last dim is {0}; it must be X's spatial rank {1}")
    text = checks.Text(g[0], x[0])
    o.require("eq", text.values, "grid has batch {0} but X has {1}")
    if hir.element_dtype(o.input(1)) != o.result_dtype():
        o.fail("GridSample with a grid of another element type than X is not supported")
    mode = hir.get_str(o.op, "onnx.mode", "linear")
    padding = hir.get_str(o.op, "onnx.padding_mode", "zeros")
    if mode not in _GS_MODES:
        raise ModelError(f"{o.where}: mode '{mode}' is not one of linear, nearest, cubic")
    if padding not in _GS_PADDING:
        raise ModelError(f"{o.where}: padding_mode '{padding}' is not one of zeros, border, reflection")
    align = o.attr_int("align_corners", 0)
    replace(o, GRID_SAMPLE, [o.input(0), o.input(1)],
            {"mode": _GS_MODES[mode], "padding_mode": _GS_PADDING[padding], "align_corners": int(align != 0)},
            [[x[0], x[1], *g[1:-1]]])


register(OpDef("GridSample", "grid_sample", _grid_sample, (GRID_SAMPLE,)))
