"""ShuffleNetV2 (Paddle's `paddle.vision.models.ShuffleNetV2`)."""

from __future__ import annotations

import pdx
from pdx import nn
from pdx._random import as_rngs
from pdx.vision.models._common import channel_axis, check_data_format, flatten_features, refuse_pretrained
from pdx.vision.ops._layers import ConvNormActivation

__all__ = ["ShuffleNetV2", "shufflenet_v2_x0_25", "shufflenet_v2_x0_33", "shufflenet_v2_x0_5",
           "shufflenet_v2_x1_0", "shufflenet_v2_x1_5", "shufflenet_v2_x2_0", "shufflenet_v2_swish"]

_STAGE_REPEATS = (4, 8, 4)
# scale -> output channels of the stem, the three stages and the last 1x1 convolution
_STAGE_OUT_CHANNELS = {0.25: (24, 24, 48, 96, 512), 0.33: (24, 32, 64, 128, 512), 0.5: (24, 48, 96, 192, 1024),
                       1.0: (24, 116, 232, 464, 1024), 1.5: (24, 176, 352, 704, 1024),
                       2.0: (24, 224, 488, 976, 2048)}
_ACTIVATIONS = {"relu": nn.ReLU, "swish": nn.Swish, None: None}


class _InvertedResidual(nn.Layer):
    """Stride-1 unit: half the channels pass through, half go 1x1 -> 3x3 dw -> 1x1; then shuffle."""

    def __init__(self, cin, cout, stride, act, *, data_format, rngs):
        super().__init__()
        self._format = data_format
        half = cout // 2
        fmt = dict(data_format=data_format, rngs=rngs)
        self._conv_pw = ConvNormActivation(cin // 2, half, 1, stride=1, padding=0, activation_layer=act, **fmt)
        self._conv_dw = ConvNormActivation(half, half, 3, stride=stride, padding=1, groups=half,
                                           activation_layer=None, **fmt)
        self._conv_linear = ConvNormActivation(half, half, 1, stride=1, padding=0, activation_layer=act, **fmt)

    def forward(self, x):
        axis = channel_axis(self._format)
        x1, x2 = pdx.split(x, 2, axis=axis)
        x2 = self._conv_linear(self._conv_dw(self._conv_pw(x2)))
        return pdx.nn.functional.channel_shuffle(pdx.concat([x1, x2], axis=axis), 2, data_format=self._format)


class _InvertedResidualDS(nn.Layer):
    """Down-sampling unit: both branches convolve (3x3/2 depthwise), outputs concatenated, then shuffle."""

    def __init__(self, cin, cout, stride, act, *, data_format, rngs):
        super().__init__()
        self._format = data_format
        half = cout // 2
        fmt = dict(data_format=data_format, rngs=rngs)
        self._conv_dw_1 = ConvNormActivation(cin, cin, 3, stride=stride, padding=1, groups=cin,
                                             activation_layer=None, **fmt)
        self._conv_linear_1 = ConvNormActivation(cin, half, 1, stride=1, padding=0, activation_layer=act, **fmt)
        self._conv_pw_2 = ConvNormActivation(cin, half, 1, stride=1, padding=0, activation_layer=act, **fmt)
        self._conv_dw_2 = ConvNormActivation(half, half, 3, stride=stride, padding=1, groups=half,
                                             activation_layer=None, **fmt)
        self._conv_linear_2 = ConvNormActivation(half, half, 1, stride=1, padding=0, activation_layer=act, **fmt)

    def forward(self, x):
        x1 = self._conv_linear_1(self._conv_dw_1(x))
        x2 = self._conv_linear_2(self._conv_dw_2(self._conv_pw_2(x)))
        out = pdx.concat([x1, x2], axis=channel_axis(self._format))
        return pdx.nn.functional.channel_shuffle(out, 2, data_format=self._format)


class ShuffleNetV2(nn.Layer):
    """ShuffleNetV2 (Paddle's `paddle.vision.models.ShuffleNetV2`): channel split,
    depthwise convolutions and channel shuffle, stages of 4, 8 and 4 units.

    State-dict names are Paddle's (`_conv1.0.weight`, `2_1._conv_dw_1.1._mean`,
    `_last_conv.1.weight`, `_fc.weight`).

    Args:
      scale: width: 0.25, 0.33, 0.5, 1.0, 1.5 or 2.0. Default 1.0.
      act: 'relu', 'swish' or None. Default 'relu'.
      num_classes: size of the last Linear; <= 0 leaves out the classifier. Default 1000.
      with_pool: global average pool before the classifier. Default True.
      data_format: keyword-only pdx extension, 'NCHW' (Paddle's) or 'NHWC'.
      rngs: keyword-only seed / key / `flax.nnx.Rngs`.

    Returns:
      A Layer mapping [N, 3, H, W] images to [N, num_classes] logits.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.vision import models
      >>> models.ShuffleNetV2(scale=0.25, num_classes=10).eval()(jnp.zeros((1, 3, 32, 32))).shape
      (1, 10)
    """

    def __init__(self, scale=1.0, act="relu", num_classes=1000, with_pool=True, *, data_format="NCHW", rngs=None):
        super().__init__()
        if scale not in _STAGE_OUT_CHANNELS:
            raise ValueError(f"ShuffleNetV2: scale={scale!r} is not supported; use one of "
                             f"{sorted(_STAGE_OUT_CHANNELS)}")
        if act not in _ACTIVATIONS:
            raise ValueError(f"ShuffleNetV2: act={act!r} is not supported; use 'relu', 'swish' or None")
        self.scale = scale
        self.num_classes = num_classes
        self.with_pool = with_pool
        self.data_format = check_data_format("ShuffleNetV2", data_format)
        rngs = as_rngs(rngs)
        fmt = dict(data_format=data_format, rngs=rngs)
        activation = _ACTIVATIONS[act]
        channels = _STAGE_OUT_CHANNELS[scale]
        self._conv1 = ConvNormActivation(3, channels[0], 3, stride=2, padding=1, activation_layer=activation, **fmt)
        self._max_pool = nn.MaxPool2D(kernel_size=3, stride=2, padding=1, data_format=data_format)
        names = []
        for stage, repeats in enumerate(_STAGE_REPEATS):
            for i in range(repeats):
                name = f"{stage + 2}_{i + 1}"
                if i == 0:
                    block = _InvertedResidualDS(channels[stage], channels[stage + 1], 2, activation, **fmt)
                else:
                    block = _InvertedResidual(channels[stage + 1], channels[stage + 1], 1, activation, **fmt)
                self.add_sublayer(name, block)
                names.append(name)
        self._names = tuple(names)
        self._last_conv = ConvNormActivation(channels[-2], channels[-1], 1, stride=1, padding=0,
                                             activation_layer=activation, **fmt)
        if with_pool:
            self._pool2d_avg = nn.AdaptiveAvgPool2D(1, data_format=data_format)
        if num_classes > 0:
            self._out_c = channels[-1]
            self._fc = nn.Linear(channels[-1], num_classes, rngs=rngs)

    def forward(self, x):
        x = self._max_pool(self._conv1(x))
        for name in self._names:
            x = getattr(self, name)(x)
        x = self._last_conv(x)
        if self.with_pool:
            x = self._pool2d_avg(x)
        if self.num_classes > 0:
            x = self._fc(flatten_features(x, self.data_format))
        return x


def _factory(arch, scale, act="relu"):
    def build(pretrained=False, **kwargs):
        refuse_pretrained(arch, pretrained)
        kwargs.setdefault("act", act)
        return ShuffleNetV2(scale=scale, **kwargs)

    build.__name__ = build.__qualname__ = arch
    build.__doc__ = f"""ShuffleNetV2 at width {scale}{' with swish' if act == 'swish' else ''} (Paddle's
    `paddle.vision.models.{arch}`).

    Args:
      pretrained: must be False (pdx downloads nothing); True raises a ValueError
        that shows how to load weights you have.
      **kwargs: `ShuffleNetV2` arguments (act, num_classes, with_pool, data_format, rngs).

    Returns:
      A `ShuffleNetV2`.

    Example:
      >>> from pdx.vision import models
      >>> net = models.{arch}(num_classes=10)
    """
    return build


shufflenet_v2_x0_25 = _factory("shufflenet_v2_x0_25", 0.25)
shufflenet_v2_x0_33 = _factory("shufflenet_v2_x0_33", 0.33)
shufflenet_v2_x0_5 = _factory("shufflenet_v2_x0_5", 0.5)
shufflenet_v2_x1_0 = _factory("shufflenet_v2_x1_0", 1.0)
shufflenet_v2_x1_5 = _factory("shufflenet_v2_x1_5", 1.5)
shufflenet_v2_x2_0 = _factory("shufflenet_v2_x2_0", 2.0)
shufflenet_v2_swish = _factory("shufflenet_v2_swish", 1.0, "swish")
