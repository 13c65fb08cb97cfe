"""Resampling and rearranging layers: Upsample, UpsamplingNearest2D,
UpsamplingBilinear2D, PixelShuffle, PixelUnshuffle, ChannelShuffle, Fold, Unfold.

Stateless: each holds its configuration (as static tuples, so a compiled step
keeps it out of the traced state) and calls the matching `F` op.
"""

from __future__ import annotations

import pdx.nn.functional as F
from pdx.nn._common import layer_error, reprlist
from pdx.nn._layer import Layer

__all__ = ["ChannelShuffle", "Fold", "PixelShuffle", "PixelUnshuffle", "Unfold", "Upsample",
           "UpsamplingBilinear2D", "UpsamplingNearest2D"]


def _static(value):
    """Lists -> tuples (hashable, static under jit); ints and None unchanged."""
    if isinstance(value, list):
        return tuple(_static(v) for v in value)
    return value


def _arg(value):
    """Tuples back to lists for the F call (Paddle's ops take lists)."""
    return list(value) if isinstance(value, tuple) else value


class Upsample(Layer):
    """Resize 3-D/4-D/5-D inputs with `F.interpolate` (Paddle's `nn.Upsample`).

    Args:
      size: output spatial size, or None.
      scale_factor: a float or one per spatial dim, used when size is None.
      mode: 'nearest', 'linear', 'bilinear', 'bicubic', 'trilinear' or 'area'.
      align_corners: align corner pixel centers (linear modes).
      align_mode: 0 (half-pixel) or 1 for the linear modes.
      data_format: layout; None picks NCW/NCHW/NCDHW from the input rank.
      recompute_scale_factor: compute the size from scale_factor, then resample by sizes.
      name: ignored (Paddle compatibility).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.Upsample(scale_factor=2, mode="bilinear")(jnp.ones((1, 1, 2, 3))).shape
      (1, 1, 4, 6)
    """

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=False, align_mode=0,
                 data_format=None, recompute_scale_factor=None, name=None, *, rngs=None):
        super().__init__()
        if not isinstance(mode, str):
            raise layer_error("Upsample", f"mode must be a string such as 'nearest' or 'bilinear'; got mode={mode!r}")
        self.size = _static(size)
        self.scale_factor = _static(scale_factor)
        self.mode = mode.lower()
        self.align_corners = align_corners
        self.align_mode = align_mode
        self.data_format = data_format
        self.recompute_scale_factor = recompute_scale_factor
        self.name = name

    def forward(self, x):
        return F.interpolate(x, size=_arg(self.size), scale_factor=_arg(self.scale_factor), mode=self.mode,
                             align_corners=self.align_corners, align_mode=self.align_mode,
                             data_format=self.data_format, recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self) -> str:
        main = f"scale_factor={reprlist(self.scale_factor)}" if self.scale_factor is not None \
            else f"size={reprlist(self.size)}"
        name = f", name={self.name}" if self.name else ""
        return f"{main}, mode={self.mode}, align_corners={self.align_corners}, align_mode={self.align_mode}, " \
               f"data_format={self.data_format}{name}"


class _Upsampling2D(Layer):
    _mode = "nearest"
    _align_corners = False

    def __init__(self, size=None, scale_factor=None, data_format="NCHW", name=None, *, rngs=None):
        super().__init__()
        self.size = (size, size) if isinstance(size, int) else _static(size)
        self.scale_factor = _static(scale_factor)
        self.data_format = data_format
        self.name = name

    def forward(self, x):
        return F.interpolate(x, size=_arg(self.size), scale_factor=_arg(self.scale_factor), mode=self._mode,
                             align_corners=self._align_corners, data_format=self.data_format)

    def extra_repr(self) -> str:
        main = f"scale_factor={reprlist(self.scale_factor)}" if self.scale_factor is not None \
            else f"size={reprlist(self.size)}"
        name = f", name={self.name}" if self.name else ""
        return f"{main}, data_format={self.data_format}{name}"


class UpsamplingNearest2D(_Upsampling2D):
    """Nearest-neighbour upsampling of a 4-D input (Paddle's `nn.UpsamplingNearest2D`).

    Args:
      size: an int or [H_out, W_out], or None.
      scale_factor: a float or [sh, sw], used when size is None.
      data_format: 'NCHW' or 'NHWC'.
      name: ignored (Paddle compatibility).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.UpsamplingNearest2D(scale_factor=2)(jnp.ones((1, 1, 2, 2))).shape
      (1, 1, 4, 4)
    """


class UpsamplingBilinear2D(_Upsampling2D):
    """Bilinear upsampling with align_corners=True (Paddle's `nn.UpsamplingBilinear2D`).

    Args:
      size: an int or [H_out, W_out], or None.
      scale_factor: a float or [sh, sw], used when size is None.
      data_format: 'NCHW' or 'NHWC'.
      name: ignored (Paddle compatibility).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.UpsamplingBilinear2D(size=3)(jnp.ones((1, 1, 2, 2))).shape
      (1, 1, 3, 3)
    """

    _mode = "bilinear"
    _align_corners = True


class PixelShuffle(Layer):
    """[N, C * r^2, H, W] -> [N, C, H * r, W * r] (Paddle's `nn.PixelShuffle`).

    Args:
      upscale_factor: r.
      data_format: 'NCHW' or 'NHWC'.
      name: ignored (Paddle compatibility).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.PixelShuffle(2)(jnp.ones((1, 8, 3, 3))).shape
      (1, 2, 6, 6)
    """

    def __init__(self, upscale_factor, data_format="NCHW", name=None, *, rngs=None):
        super().__init__()
        if not isinstance(upscale_factor, int) or upscale_factor < 1:
            raise layer_error("PixelShuffle", f"upscale_factor must be a positive int; got {upscale_factor!r}")
        if data_format not in ("NCHW", "NHWC"):
            raise layer_error("PixelShuffle", f"data_format={data_format!r} must be 'NCHW' or 'NHWC'")
        self._upscale_factor = upscale_factor
        self._data_format = data_format
        self._name = name

    def forward(self, x):
        return F.pixel_shuffle(x, self._upscale_factor, self._data_format)

    def extra_repr(self) -> str:
        out = f"upscale_factor={self._upscale_factor}"
        if self._data_format != "NCHW":
            out += f", data_format={self._data_format}"
        return out + (f", name={self._name}" if self._name is not None else "")


class PixelUnshuffle(Layer):
    """[N, C, H * r, W * r] -> [N, C * r^2, H, W] (Paddle's `nn.PixelUnshuffle`).

    Args:
      downscale_factor: r.
      data_format: 'NCHW' or 'NHWC'.
      name: ignored (Paddle compatibility).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.PixelUnshuffle(2)(jnp.ones((1, 2, 6, 6))).shape
      (1, 8, 3, 3)
    """

    def __init__(self, downscale_factor, data_format="NCHW", name=None, *, rngs=None):
        super().__init__()
        if not isinstance(downscale_factor, int) or downscale_factor < 1:
            raise layer_error("PixelUnshuffle", f"downscale_factor must be a positive int; got {downscale_factor!r}")
        if data_format not in ("NCHW", "NHWC"):
            raise layer_error("PixelUnshuffle", f"data_format={data_format!r} must be 'NCHW' or 'NHWC'")
        self._downscale_factor = downscale_factor
        self._data_format = data_format
        self._name = name

    def forward(self, x):
        return F.pixel_unshuffle(x, self._downscale_factor, self._data_format)

    def extra_repr(self) -> str:
        out = f"downscale_factor={self._downscale_factor}"
        if self._data_format != "NCHW":
            out += f", data_format={self._data_format}"
        return out + (f", name={self._name}" if self._name is not None else "")


class ChannelShuffle(Layer):
    """Interleave the channels of `groups` groups (ShuffleNet; Paddle's `nn.ChannelShuffle`).

    Args:
      groups: number of channel groups.
      data_format: 'NCHW' or 'NHWC'.
      name: ignored (Paddle compatibility).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.ChannelShuffle(2)(jnp.arange(4.0).reshape(1, 4, 1, 1)).ravel().tolist()
      [0.0, 2.0, 1.0, 3.0]
    """

    def __init__(self, groups, data_format="NCHW", name=None, *, rngs=None):
        super().__init__()
        if not isinstance(groups, int) or groups < 1:
            raise layer_error("ChannelShuffle", f"groups must be a positive int; got groups={groups!r}")
        if data_format not in ("NCHW", "NHWC"):
            raise layer_error("ChannelShuffle", f"data_format={data_format!r} must be 'NCHW' or 'NHWC'")
        self._groups = groups
        self._data_format = data_format
        self._name = name

    def forward(self, x):
        return F.channel_shuffle(x, self._groups, self._data_format)

    def extra_repr(self) -> str:
        out = f"groups={self._groups}"
        if self._data_format != "NCHW":
            out += f", data_format={self._data_format}"
        return out + (f", name={self._name}" if self._name is not None else "")


class Unfold(Layer):
    """im2col: sliding blocks of [N, C, H, W] -> [N, C * kh * kw, L] (Paddle's `nn.Unfold`).

    Args:
      kernel_sizes: an int or [kh, kw].
      dilations: an int or 2 ints.
      paddings: an int, 2 ints or 4 ints [top, left, bottom, right].
      strides: an int or 2 ints.
      name: ignored (Paddle compatibility).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.Unfold(2)(jnp.ones((1, 2, 4, 4))).shape
      (1, 8, 9)
    """

    def __init__(self, kernel_sizes, dilations=1, paddings=0, strides=1, name=None, *, rngs=None):
        super().__init__()
        self.kernel_sizes = _static(kernel_sizes)
        self.dilations = _static(dilations)
        self.paddings = _static(paddings)
        self.strides = _static(strides)
        self.name = name

    def forward(self, input):  # noqa: A002  (Paddle's argument name)
        return F.unfold(input, _arg(self.kernel_sizes), _arg(self.strides), _arg(self.paddings),
                        _arg(self.dilations))

    def extra_repr(self) -> str:
        name = f", name={self.name}" if self.name else ""
        return (f"kernel_size={reprlist(self.kernel_sizes)}, dilation={reprlist(self.dilations)}, "
                f"padding={reprlist(self.paddings)}, stride={reprlist(self.strides)}{name}")


class Fold(Layer):
    """col2im: sum [N, C * kh * kw, L] blocks into [N, C, H, W] (Paddle's `nn.Fold`).

    Args:
      output_sizes: [H, W] of the result.
      kernel_sizes: an int or [kh, kw].
      dilations: an int or 2 ints.
      paddings: an int, 2 ints or 4 ints [top, left, bottom, right].
      strides: an int or 2 ints.
      name: ignored (Paddle compatibility).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.Fold([4, 4], 2)(jnp.ones((1, 8, 9))).shape
      (1, 2, 4, 4)
    """

    def __init__(self, output_sizes, kernel_sizes, dilations=1, paddings=0, strides=1, name=None, *, rngs=None):
        super().__init__()
        self.output_sizes = _static(output_sizes)
        self.kernel_sizes = _static(kernel_sizes)
        self.dilations = _static(dilations)
        self.paddings = _static(paddings)
        self.strides = _static(strides)
        self.name = name

    def forward(self, input):  # noqa: A002  (Paddle's argument name)
        return F.fold(input, _arg(self.output_sizes), _arg(self.kernel_sizes), _arg(self.strides),
                      _arg(self.paddings), _arg(self.dilations))

    def extra_repr(self) -> str:
        name = f", name={self.name}" if self.name else ""
        return (f"kernel_size={reprlist(self.kernel_sizes)}, dilation={reprlist(self.dilations)}, "
                f"padding={reprlist(self.paddings)}, stride={reprlist(self.strides)}{name}")
