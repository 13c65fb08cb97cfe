"""ConvNormActivation (Paddle's `paddle.vision.ops.ConvNormActivation`)."""

from __future__ import annotations

import inspect

from pdx import nn
from pdx._random import as_rngs

__all__ = ["ConvNormActivation"]


def _build(factory, *args, **extra):
    """Call a layer factory with the pdx keywords it accepts (a user's own norm or
    activation class may take neither `data_format` nor `rngs`)."""
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return factory(*args)
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return factory(*args, **extra)
    return factory(*args, **{k: v for k, v in extra.items() if k in params})


class ConvNormActivation(nn.Sequential):
    """Conv2D, then a normalization layer, then an activation, as one Sequential
    (children '0', '1', '2'; Paddle's `paddle.vision.ops.ConvNormActivation`).

    Args:
      in_channels, out_channels: channel counts.
      kernel_size: int or (kh, kw). Default 3.
      stride: Default 1.
      padding: Default None: `(kernel_size - 1) // 2 * dilation` ('same' for odd kernels).
      groups: convolution groups. Default 1.
      norm_layer: a class/callable taking the channel count (default `nn.BatchNorm2D`);
        None leaves it out.
      activation_layer: a class/callable taking no arguments (default `nn.ReLU`);
        None leaves it out.
      dilation: Default 1.
      bias: convolution bias; default None means "only when there is no norm layer".
      data_format: keyword-only pdx extension, 'NCHW' or 'NHWC' (passed to the
        convolution and to a norm layer that accepts it).
      rngs: keyword-only seed / key / `flax.nnx.Rngs` for the initial weights.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.vision.ops import ConvNormActivation
      >>> ConvNormActivation(3, 8, 3, stride=2)(jnp.ones((1, 3, 8, 8))).shape
      (1, 8, 4, 4)
    """

    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, padding=None, groups=1,
                 norm_layer=nn.BatchNorm2D, activation_layer=nn.ReLU, dilation=1, bias=None, *,
                 data_format="NCHW", rngs=None):
        if padding is None:
            if not isinstance(kernel_size, int) or not isinstance(dilation, int):
                raise ValueError(f"ConvNormActivation: padding=None needs int kernel_size and dilation; got "
                                 f"kernel_size={kernel_size!r}, dilation={dilation!r}; pass padding explicitly")
            padding = (kernel_size - 1) // 2 * dilation
        if bias is None:
            bias = norm_layer is None
        rngs = as_rngs(rngs)
        layers = [nn.Conv2D(in_channels, out_channels, kernel_size, stride, padding, dilation=dilation,
                            groups=groups, bias_attr=None if bias else False, data_format=data_format,
                            rngs=rngs)]
        if norm_layer is not None:
            layers.append(_build(norm_layer, out_channels, data_format=data_format, rngs=rngs))
        if activation_layer is not None:
            layers.append(_build(activation_layer, rngs=rngs))
        super().__init__(*layers)
