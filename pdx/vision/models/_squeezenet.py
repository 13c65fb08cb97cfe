"""SqueezeNet 1.0 / 1.1 (Paddle's `paddle.vision.models.SqueezeNet`)."""

from __future__ import annotations

import pdx
from pdx import nn
from pdx._random import as_rngs
from pdx.vision.models._common import channel_axis, check_data_format, refuse_pretrained

__all__ = ["SqueezeNet", "squeezenet1_0", "squeezenet1_1"]

_VERSIONS = ("1.0", "1.1")
# Fire modules (in, squeeze, expand 1x1, expand 3x3), the same for both versions after the stem.
_FIRES = ((16, 64, 64), (16, 64, 64), (32, 128, 128), (32, 128, 128), (48, 192, 192), (48, 192, 192),
          (64, 256, 256), (64, 256, 256))
# After which fire modules (1-based, 0 = the stem) the 3x3/2 max pool runs.
_POOLS = {"1.0": (0, 3, 7), "1.1": (0, 2, 4)}


class _FireConv(nn.Layer):
    def __init__(self, cin, cout, k, padding=0, *, data_format, rngs):
        super().__init__()
        self._conv = nn.Conv2D(cin, cout, k, padding=padding, data_format=data_format, rngs=rngs)

    def forward(self, x):
        return pdx.nn.functional.relu(self._conv(x))


class _Fire(nn.Layer):
    """Squeeze (1x1) then expand (1x1 and 3x3, concatenated)."""

    def __init__(self, cin, squeeze, e1, e3, *, data_format, rngs):
        super().__init__()
        self._axis = channel_axis(data_format)
        fmt = dict(data_format=data_format, rngs=rngs)
        self._conv = _FireConv(cin, squeeze, 1, **fmt)
        self._conv_path1 = _FireConv(squeeze, e1, 1, **fmt)
        self._conv_path2 = _FireConv(squeeze, e3, 3, padding=1, **fmt)

    def forward(self, x):
        x = self._conv(x)
        return pdx.concat([self._conv_path1(x), self._conv_path2(x)], axis=self._axis)


class SqueezeNet(nn.Layer):
    """SqueezeNet (Paddle's `paddle.vision.models.SqueezeNet`): fire modules and a
    1x1-convolution classifier.

    Args:
      version: '1.0' or '1.1'.
      num_classes: output channels of the last 1x1 convolution. Default 1000.
      with_pool: ReLU + global average pool + squeeze to [N, num_classes]. Default True.
      data_format: keyword-only pdx extension, 'NCHW' (Paddle's) or 'NHWC'.
      rngs: keyword-only seed / key / `flax.nnx.Rngs`.

    Returns:
      A Layer mapping [N, 3, H, W] images to [N, num_classes] logits.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.vision import models
      >>> models.SqueezeNet("1.1", num_classes=10).eval()(jnp.zeros((1, 3, 64, 64))).shape
      (1, 10)
    """

    def __init__(self, version, num_classes=1000, with_pool=True, *, data_format="NCHW", rngs=None):
        super().__init__()
        if version not in _VERSIONS:
            raise ValueError(f"SqueezeNet: version={version!r} is not supported; use one of {list(_VERSIONS)}")
        self.version = version
        self.num_classes = num_classes
        self.with_pool = with_pool
        self.data_format = check_data_format("SqueezeNet", data_format)
        rngs = as_rngs(rngs)
        fmt = dict(data_format=data_format, rngs=rngs)
        if version == "1.0":
            self._conv = nn.Conv2D(3, 96, 7, stride=2, **fmt)
            cin = 96
        else:
            self._conv = nn.Conv2D(3, 64, 3, stride=2, padding=1, **fmt)
            cin = 64
        self._pool = nn.MaxPool2D(kernel_size=3, stride=2, padding=0, data_format=data_format)
        for i, (squeeze, e1, e3) in enumerate(_FIRES):
            setattr(self, f"_conv{i + 1}", _Fire(cin, squeeze, e1, e3, **fmt))
            cin = e1 + e3
        self._drop = nn.Dropout(p=0.5, mode="downscale_in_infer", rngs=rngs)
        self._conv9 = nn.Conv2D(512, num_classes, 1, **fmt)
        self._avg_pool = nn.AdaptiveAvgPool2D(1, data_format=data_format)

    def forward(self, x):
        x = self._pool(pdx.nn.functional.relu(self._conv(x)))
        pools = _POOLS[self.version][1:]
        for i in range(1, len(_FIRES) + 1):
            x = getattr(self, f"_conv{i}")(x)
            if i in pools:
                x = self._pool(x)
        if self.num_classes > 0:
            x = self._conv9(self._drop(x))
        if self.with_pool:
            x = self._avg_pool(pdx.nn.functional.relu(x))
            x = pdx.flatten(x, 1)
        return x


def squeezenet1_0(pretrained=False, **kwargs):
    """SqueezeNet 1.0 (Paddle's `paddle.vision.models.squeezenet1_0`).

    Args:
      pretrained: must be False (pdx downloads nothing); True raises a ValueError
        that shows how to load weights you have.
      **kwargs: `SqueezeNet` arguments (num_classes, with_pool, data_format, rngs).

    Example:
      >>> from pdx.vision import models
      >>> net = models.squeezenet1_0(num_classes=10)
    """
    refuse_pretrained("squeezenet1_0", pretrained)
    return SqueezeNet("1.0", **kwargs)


def squeezenet1_1(pretrained=False, **kwargs):
    """SqueezeNet 1.1 (Paddle's `paddle.vision.models.squeezenet1_1`).

    Args:
      pretrained: must be False (pdx downloads nothing); True raises a ValueError
        that shows how to load weights you have.
      **kwargs: `SqueezeNet` arguments (num_classes, with_pool, data_format, rngs).

    Example:
      >>> from pdx.vision import models
      >>> net = models.squeezenet1_1(num_classes=10)
    """
    refuse_pretrained("squeezenet1_1", pretrained)
    return SqueezeNet("1.1", **kwargs)
