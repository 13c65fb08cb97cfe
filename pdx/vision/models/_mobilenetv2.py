"""MobileNetV2 (Paddle's `paddle.vision.models.MobileNetV2`)."""

from __future__ import annotations

import functools

from pdx import nn
from pdx._random import as_rngs
from pdx.vision.models._common import check_data_format, flatten_features, refuse_pretrained

__all__ = ["MobileNetV2", "mobilenet_v2"]

# (expand ratio t, output channels c, repeats n, first stride s), from the paper.
_INVERTED_RESIDUAL_SETTING = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                              (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1))


def _make_divisible(v, divisor=8, min_value=None):
    """Round a channel count to a multiple of `divisor`, never below 90% of `v`."""
    min_value = divisor if min_value is None else min_value
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


class _ConvBNReLU6(nn.Sequential):
    """Conv2D (no bias) + BatchNorm2D + ReLU6, 'same' padding: Paddle's
    `vision.ops.ConvNormActivation` as MobileNetV2 uses it (children '0', '1', '2')."""

    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, groups=1, *, data_format, rngs):
        super().__init__(
            nn.Conv2D(in_channels, out_channels, kernel_size, stride, (kernel_size - 1) // 2, groups=groups,
                      bias_attr=False, data_format=data_format, rngs=rngs),
            nn.BatchNorm2D(out_channels, data_format=data_format, rngs=rngs),
            nn.ReLU6(),
        )


class _InvertedResidual(nn.Layer):
    """Expand (1x1), depthwise 3x3, project (1x1, linear); residual when shapes allow."""

    def __init__(self, inp, oup, stride, expand_ratio, *, data_format, rngs):
        super().__init__()
        if stride not in (1, 2):
            raise ValueError(f"InvertedResidual: stride={stride!r} must be 1 or 2")
        self.stride = stride
        hidden_dim = int(round(inp * expand_ratio))
        self.use_res_connect = stride == 1 and inp == oup
        block = functools.partial(_ConvBNReLU6, data_format=data_format, rngs=rngs)
        layers = [block(inp, hidden_dim, kernel_size=1)] if expand_ratio != 1 else []
        layers += [
            block(hidden_dim, hidden_dim, stride=stride, groups=hidden_dim),
            nn.Conv2D(hidden_dim, oup, 1, 1, 0, bias_attr=False, data_format=data_format, rngs=rngs),
            nn.BatchNorm2D(oup, data_format=data_format, rngs=rngs),
        ]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


class MobileNetV2(nn.Layer):
    """MobileNetV2 (Paddle's `paddle.vision.models.MobileNetV2`): inverted
    residual blocks with linear bottlenecks, ReLU6, depthwise convolutions.

    State-dict names and shapes are Paddle's (`features.0.0.weight`,
    `features.1.conv.0.1._mean`, `classifier.1.weight`, ...).

    Args:
      scale: channel multiplier (counts rounded to multiples of 8). Default 1.0.
      num_classes: size of the last Linear; <= 0 leaves out the classifier. Default 1000.
      with_pool: average-pool to 1x1 before the classifier. Default True.
      data_format: keyword-only pdx extension: 'NCHW' (Paddle's) or 'NHWC'; the
        state dict is the same.
      rngs: keyword-only seed / key / `flax.nnx.Rngs` for the initial weights and
        the classifier's dropout; default: the global generator (`pdx.seed`).

    Returns:
      A Layer mapping [N, 3, H, W] images to [N, num_classes] logits.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.vision import models
      >>> net = models.MobileNetV2(scale=0.5, num_classes=10).eval()
      >>> net(jnp.zeros((1, 3, 32, 32))).shape
      (1, 10)
    """

    def __init__(self, scale=1.0, num_classes=1000, with_pool=True, *, data_format="NCHW", rngs=None):
        super().__init__()
        self.num_classes = num_classes
        self.with_pool = with_pool
        self.data_format = check_data_format("MobileNetV2", data_format)
        rngs = as_rngs(rngs)
        fmt = dict(data_format=data_format, rngs=rngs)
        input_channel = _make_divisible(32 * scale)
        self.last_channel = _make_divisible(1280 * max(1.0, scale))
        features = [_ConvBNReLU6(3, input_channel, stride=2, **fmt)]
        for t, c, n, s in _INVERTED_RESIDUAL_SETTING:
            output_channel = _make_divisible(c * scale)
            for i in range(n):
                features.append(_InvertedResidual(input_channel, output_channel, s if i == 0 else 1, t, **fmt))
                input_channel = output_channel
        features.append(_ConvBNReLU6(input_channel, self.last_channel, kernel_size=1, **fmt))
        self.features = nn.Sequential(*features)
        if with_pool:
            self.pool2d_avg = nn.AdaptiveAvgPool2D(1, data_format=data_format)
        if num_classes > 0:
            self.classifier = nn.Sequential(nn.Dropout(0.2, rngs=rngs),
                                            nn.Linear(self.last_channel, num_classes, rngs=rngs))

    def forward(self, x):
        x = self.features(x)
        if self.with_pool:
            x = self.pool2d_avg(x)
        if self.num_classes > 0:
            x = self.classifier(flatten_features(x, self.data_format))
        return x


def mobilenet_v2(pretrained=False, scale=1.0, **kwargs):
    """MobileNetV2 (Paddle's `paddle.vision.models.mobilenet_v2`).

    Args:
      pretrained: must be False: pdx downloads nothing. Load weights you have with
        `net.set_state_dict(...)` (Paddle's names and shapes); True raises a
        ValueError that shows how.
      scale: channel multiplier. Default 1.0.
      **kwargs: `MobileNetV2` arguments: num_classes=1000, with_pool=True, and the
        keyword-only pdx extensions data_format='NCHW' and rngs=None.

    Returns:
      A `MobileNetV2`.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.vision import models
      >>> models.mobilenet_v2(num_classes=10).eval()(jnp.zeros((1, 3, 32, 32))).shape
      (1, 10)
    """
    refuse_pretrained("mobilenet_v2", pretrained)
    return MobileNetV2(scale=scale, **kwargs)
