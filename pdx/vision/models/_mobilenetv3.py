"""MobileNetV3 Small / Large (Paddle's `paddle.vision.models.MobileNetV3Small`, `MobileNetV3Large`)."""

from __future__ import annotations

import functools
from typing import NamedTuple

from pdx import nn
from pdx._random import as_rngs
from pdx.vision.models._common import check_data_format, flatten_features, refuse_pretrained
from pdx.vision.models._mobilenetv2 import _make_divisible
from pdx.vision.ops._layers import ConvNormActivation

__all__ = ["MobileNetV3Small", "MobileNetV3Large", "mobilenet_v3_small", "mobilenet_v3_large"]


class _BlockConfig(NamedTuple):
    """One inverted residual block, channel counts before scaling."""

    in_channels: int
    kernel: int
    expanded_channels: int
    out_channels: int
    use_se: bool
    activation: str
    stride: int


_SMALL = tuple(_BlockConfig(*c) for c in (
    (16, 3, 16, 16, True, "relu", 2), (16, 3, 72, 24, False, "relu", 2), (24, 3, 88, 24, False, "relu", 1),
    (24, 5, 96, 40, True, "hardswish", 2), (40, 5, 240, 40, True, "hardswish", 1),
    (40, 5, 240, 40, True, "hardswish", 1), (40, 5, 120, 48, True, "hardswish", 1),
    (48, 5, 144, 48, True, "hardswish", 1), (48, 5, 288, 96, True, "hardswish", 2),
    (96, 5, 576, 96, True, "hardswish", 1), (96, 5, 576, 96, True, "hardswish", 1)))
_LARGE = tuple(_BlockConfig(*c) for c in (
    (16, 3, 16, 16, False, "relu", 1), (16, 3, 64, 24, False, "relu", 2), (24, 3, 72, 24, False, "relu", 1),
    (24, 5, 72, 40, True, "relu", 2), (40, 5, 120, 40, True, "relu", 1), (40, 5, 120, 40, True, "relu", 1),
    (40, 3, 240, 80, False, "hardswish", 2), (80, 3, 200, 80, False, "hardswish", 1),
    (80, 3, 184, 80, False, "hardswish", 1), (80, 3, 184, 80, False, "hardswish", 1),
    (80, 3, 480, 112, True, "hardswish", 1), (112, 3, 672, 112, True, "hardswish", 1),
    (112, 5, 672, 160, True, "hardswish", 2), (160, 5, 960, 160, True, "hardswish", 1),
    (160, 5, 960, 160, True, "hardswish", 1)))
_ACTIVATIONS = {"relu": nn.ReLU, "hardswish": nn.Hardswish}


class _SqueezeExcitation(nn.Layer):
    """Global pool -> 1x1 conv -> ReLU -> 1x1 conv -> Hardsigmoid, scaling the input's channels."""

    def __init__(self, channels, squeeze_channels, *, data_format, rngs):
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2D(1, data_format=data_format)
        self.fc1 = nn.Conv2D(channels, squeeze_channels, 1, data_format=data_format, rngs=rngs)
        self.fc2 = nn.Conv2D(squeeze_channels, channels, 1, data_format=data_format, rngs=rngs)
        self.activation = nn.ReLU()
        self.scale_activation = nn.Hardsigmoid()

    def forward(self, x):
        scale = self.fc2(self.activation(self.fc1(self.avgpool(x))))
        return self.scale_activation(scale) * x


class _InvertedResidual(nn.Layer):
    def __init__(self, cfg, *, data_format, rngs):
        super().__init__()
        act = _ACTIVATIONS[cfg.activation]
        cna = functools.partial(ConvNormActivation, norm_layer=_norm_layer, data_format=data_format, rngs=rngs)
        cin, mid, cout = cfg.in_channels, cfg.expanded_channels, cfg.out_channels
        self.use_res_connect = cfg.stride == 1 and cin == cout
        self.use_se = cfg.use_se
        self.expand = cin != mid
        if self.expand:
            self.expand_conv = cna(cin, mid, 1, stride=1, padding=0, activation_layer=act)
        self.bottleneck_conv = cna(mid, mid, cfg.kernel, stride=cfg.stride, padding=(cfg.kernel - 1) // 2,
                                   groups=mid, activation_layer=act)
        if self.use_se:
            self.mid_se = _SqueezeExcitation(mid, _make_divisible(mid // 4), data_format=data_format, rngs=rngs)
        self.linear_conv = cna(mid, cout, 1, stride=1, padding=0, activation_layer=None)

    def forward(self, x):
        y = self.expand_conv(x) if self.expand else x
        y = self.bottleneck_conv(y)
        if self.use_se:
            y = self.mid_se(y)
        y = self.linear_conv(y)
        return x + y if self.use_res_connect else y


def _norm_layer(channels, *, data_format="NCHW", rngs=None):
    return nn.BatchNorm2D(channels, epsilon=0.001, momentum=0.99, data_format=data_format, rngs=rngs)


class _MobileNetV3(nn.Layer):
    """The network both MobileNetV3 variants build from their block tables."""

    def __init__(self, arch, config, last_channel, scale, num_classes, with_pool, data_format, rngs):
        super().__init__()
        self.scale = scale
        self.num_classes = num_classes
        self.with_pool = with_pool
        self.data_format = check_data_format(arch, data_format)
        rngs = as_rngs(rngs)
        fmt = dict(data_format=data_format, rngs=rngs)
        adjust = lambda c: _make_divisible(c * scale, 8)  # noqa: E731
        config = [cfg._replace(in_channels=adjust(cfg.in_channels), expanded_channels=adjust(cfg.expanded_channels),
                               out_channels=adjust(cfg.out_channels)) for cfg in config]
        self.last_channel = last_channel
        lastconv_in = config[-1].in_channels
        lastconv_out = lastconv_in * 6
        self.conv = ConvNormActivation(3, config[0].in_channels, 3, stride=2, padding=1, groups=1,
                                       activation_layer=nn.Hardswish, norm_layer=_norm_layer, **fmt)
        self.blocks = nn.Sequential(*[_InvertedResidual(cfg, **fmt) for cfg in config])
        self.lastconv = ConvNormActivation(lastconv_in, lastconv_out, 1, stride=1, padding=0, groups=1,
                                           norm_layer=_norm_layer, activation_layer=nn.Hardswish, **fmt)
        if with_pool:
            self.avgpool = nn.AdaptiveAvgPool2D(1, data_format=data_format)
        if num_classes > 0:
            self.classifier = nn.Sequential(nn.Linear(lastconv_out, last_channel, rngs=rngs), nn.Hardswish(),
                                            nn.Dropout(p=0.2, rngs=rngs), nn.Linear(last_channel, num_classes,
                                                                                    rngs=rngs))

    def forward(self, x):
        x = self.lastconv(self.blocks(self.conv(x)))
        if self.with_pool:
            x = self.avgpool(x)
        if self.num_classes > 0:
            x = self.classifier(flatten_features(x, self.data_format))
        return x


_DOC = """MobileNetV3-{size} (Paddle's `paddle.vision.models.MobileNetV3{size}`): inverted
    residuals with squeeze-excitation and hard-swish, BatchNorm epsilon 1e-3.

    State-dict names are Paddle's (`conv.0.weight`, `blocks.0.mid_se.fc1.weight`,
    `lastconv.1._variance`, `classifier.0.weight`).

    Args:
      scale: channel multiplier (counts rounded to multiples of 8). Default 1.0.
      num_classes: size of the last Linear; <= 0 leaves out the classifier. Default 1000.
      with_pool: global average pool before the classifier. Default True.
      data_format: keyword-only pdx extension, 'NCHW' (Paddle's) or 'NHWC'.
      rngs: keyword-only seed / key / `flax.nnx.Rngs`.

    Returns:
      A Layer mapping [N, 3, H, W] images to [N, num_classes] logits.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.vision import models
      >>> models.MobileNetV3{size}(num_classes=10).eval()(jnp.zeros((1, 3, 32, 32))).shape
      (1, 10)
    """


class MobileNetV3Small(_MobileNetV3):
    __doc__ = _DOC.format(size="Small")

    def __init__(self, scale=1.0, num_classes=1000, with_pool=True, *, data_format="NCHW", rngs=None):
        super().__init__("MobileNetV3Small", _SMALL, _make_divisible(1024 * scale, 8), scale, num_classes,
                         with_pool, data_format, rngs)


class MobileNetV3Large(_MobileNetV3):
    __doc__ = _DOC.format(size="Large")

    def __init__(self, scale=1.0, num_classes=1000, with_pool=True, *, data_format="NCHW", rngs=None):
        super().__init__("MobileNetV3Large", _LARGE, _make_divisible(1280 * scale, 8), scale, num_classes,
                         with_pool, data_format, rngs)


def mobilenet_v3_small(pretrained=False, scale=1.0, **kwargs):
    """MobileNetV3-Small (Paddle's `paddle.vision.models.mobilenet_v3_small`).

    Args:
      pretrained: must be False (pdx downloads nothing); True raises a ValueError
        that shows how to load weights you have.
      scale: channel multiplier. Default 1.0.
      **kwargs: `MobileNetV3Small` arguments (num_classes, with_pool, data_format, rngs).

    Example:
      >>> from pdx.vision import models
      >>> net = models.mobilenet_v3_small(num_classes=10)
    """
    refuse_pretrained("mobilenet_v3_small", pretrained)
    return MobileNetV3Small(scale=scale, **kwargs)


def mobilenet_v3_large(pretrained=False, scale=1.0, **kwargs):
    """MobileNetV3-Large (Paddle's `paddle.vision.models.mobilenet_v3_large`).

    Args:
      pretrained: must be False (pdx downloads nothing); True raises a ValueError
        that shows how to load weights you have.
      scale: channel multiplier. Default 1.0.
      **kwargs: `MobileNetV3Large` arguments (num_classes, with_pool, data_format, rngs).

    Example:
      >>> from pdx.vision import models
      >>> net = models.mobilenet_v3_large(num_classes=10)
    """
    refuse_pretrained("mobilenet_v3_large", pretrained)
    return MobileNetV3Large(scale=scale, **kwargs)
