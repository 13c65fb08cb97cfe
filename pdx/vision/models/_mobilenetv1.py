"""MobileNetV1 (Paddle's `paddle.vision.models.MobileNetV1`)."""

from __future__ import annotations

from pdx import nn
from pdx._random import as_rngs
from pdx.vision.models._common import check_data_format, flatten_features, refuse_pretrained
from pdx.vision.ops._layers import ConvNormActivation

__all__ = ["MobileNetV1", "mobilenet_v1"]

# Depthwise-separable blocks: (name, in, depthwise out, pointwise out, groups, stride), before scaling.
_BLOCKS = (("conv2_1", 32, 32, 64, 32, 1), ("conv2_2", 64, 64, 128, 64, 2), ("conv3_1", 128, 128, 128, 128, 1),
           ("conv3_2", 128, 128, 256, 128, 2), ("conv4_1", 256, 256, 256, 256, 1),
           ("conv4_2", 256, 256, 512, 256, 2),
           *((f"conv5_{i}", 512, 512, 512, 512, 1) for i in range(1, 6)),
           ("conv5_6", 512, 512, 1024, 512, 2), ("conv6", 1024, 1024, 1024, 1024, 1))


class _DepthwiseSeparable(nn.Layer):
    """3x3 depthwise Conv+BN+ReLU, then 1x1 pointwise Conv+BN+ReLU."""

    def __init__(self, cin, c1, c2, groups, stride, scale, *, data_format, rngs):
        super().__init__()
        fmt = dict(data_format=data_format, rngs=rngs)
        self._depthwise_conv = ConvNormActivation(cin, int(c1 * scale), 3, stride=stride, padding=1,
                                                  groups=int(groups * scale), **fmt)
        self._pointwise_conv = ConvNormActivation(int(c1 * scale), int(c2 * scale), 1, stride=1, padding=0, **fmt)

    def forward(self, x):
        return self._pointwise_conv(self._depthwise_conv(x))


class MobileNetV1(nn.Layer):
    """MobileNetV1 (Paddle's `paddle.vision.models.MobileNetV1`): a 3x3 stem and
    13 depthwise-separable blocks.

    State-dict names are Paddle's (`conv1.0.weight`, `conv2_1._depthwise_conv.1._mean`, `fc.weight`).

    Args:
      scale: channel multiplier. Default 1.0.
      num_classes: size of the last Linear; <= 0 leaves out the classifier. Default 1000.
      with_pool: global average pool before the classifier. Default True.
      data_format: keyword-only pdx extension, 'NCHW' (Paddle's) or 'NHWC'.
      rngs: keyword-only seed / key / `flax.nnx.Rngs`.

    Returns:
      A Layer mapping [N, 3, H, W] images to [N, num_classes] logits.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.vision import models
      >>> models.MobileNetV1(scale=0.25, num_classes=10).eval()(jnp.zeros((1, 3, 32, 32))).shape
      (1, 10)
    """

    def __init__(self, scale=1.0, num_classes=1000, with_pool=True, *, data_format="NCHW", rngs=None):
        super().__init__()
        self.scale = scale
        self.num_classes = num_classes
        self.with_pool = with_pool
        self.data_format = check_data_format("MobileNetV1", data_format)
        rngs = as_rngs(rngs)
        fmt = dict(data_format=data_format, rngs=rngs)
        self.conv1 = ConvNormActivation(3, int(32 * scale), 3, stride=2, padding=1, **fmt)
        self._names = tuple(b[0] for b in _BLOCKS)
        for name, cin, c1, c2, groups, stride in _BLOCKS:
            self.add_sublayer(name, _DepthwiseSeparable(int(cin * scale), c1, c2, groups, stride, scale, **fmt))
        if with_pool:
            self.pool2d_avg = nn.AdaptiveAvgPool2D(1, data_format=data_format)
        if num_classes > 0:
            self.fc = nn.Linear(int(1024 * scale), num_classes, rngs=rngs)

    def forward(self, x):
        x = self.conv1(x)
        for name in self._names:
            x = getattr(self, name)(x)
        if self.with_pool:
            x = self.pool2d_avg(x)
        if self.num_classes > 0:
            x = self.fc(flatten_features(x, self.data_format))
        return x


def mobilenet_v1(pretrained=False, scale=1.0, **kwargs):
    """MobileNetV1 (Paddle's `paddle.vision.models.mobilenet_v1`).

    Args:
      pretrained: must be False (pdx downloads nothing); True raises a ValueError
        that shows how to load weights you have.
      scale: channel multiplier. Default 1.0.
      **kwargs: `MobileNetV1` arguments (num_classes, with_pool, data_format, rngs).

    Returns:
      A `MobileNetV1`.

    Example:
      >>> from pdx.vision import models
      >>> net = models.mobilenet_v1(scale=0.5, num_classes=10)
    """
    refuse_pretrained("mobilenet_v1", pretrained)
    return MobileNetV1(scale=scale, **kwargs)
