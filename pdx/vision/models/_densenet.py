"""DenseNet 121/161/169/201/264 (Paddle's `paddle.vision.models.DenseNet`)."""

from __future__ import annotations

import math

import pdx
from pdx import nn
from pdx._random import as_rngs
from pdx.vision.models._common import (channel_axis, check_data_format, flatten_features, refuse_pretrained,
                                       uniform_attr)

__all__ = ["DenseNet", "densenet121", "densenet161", "densenet169", "densenet201", "densenet264"]

# layers -> (initial features, growth rate, layers per dense block)
_SPECS = {121: (64, 32, (6, 12, 24, 16)), 161: (96, 48, (6, 12, 36, 24)), 169: (64, 32, (6, 12, 32, 32)),
          201: (64, 32, (6, 12, 48, 32)), 264: (64, 32, (6, 12, 64, 48))}


class _BNACConv(nn.Layer):
    """BatchNorm + ReLU, then a bias-free convolution (pre-activation)."""

    def __init__(self, cin, cout, k, stride=1, pad=0, *, data_format, rngs):
        super().__init__()
        self._batch_norm = nn.BatchNorm(cin, act="relu", data_layout=data_format, rngs=rngs)
        self._conv = nn.Conv2D(cin, cout, k, stride, pad, bias_attr=False, data_format=data_format, rngs=rngs)

    def forward(self, x):
        return self._conv(self._batch_norm(x))


class _ConvBN(nn.Layer):
    """Bias-free convolution, then BatchNorm + ReLU (the stem)."""

    def __init__(self, cin, cout, k, stride=1, pad=0, *, data_format, rngs):
        super().__init__()
        self._conv = nn.Conv2D(cin, cout, k, stride, pad, bias_attr=False, data_format=data_format, rngs=rngs)
        self._batch_norm = nn.BatchNorm(cout, act="relu", data_layout=data_format, rngs=rngs)

    def forward(self, x):
        return self._batch_norm(self._conv(x))


class _DenseLayer(nn.Layer):
    """Bottleneck 1x1 (bn_size * growth) then 3x3 (growth); output concatenated to the input."""

    def __init__(self, cin, growth_rate, bn_size, dropout, *, data_format, rngs):
        super().__init__()
        self.dropout = dropout
        self._axis = channel_axis(data_format)
        fmt = dict(data_format=data_format, rngs=rngs)
        self.bn_ac_func1 = _BNACConv(cin, bn_size * growth_rate, 1, **fmt)
        self.bn_ac_func2 = _BNACConv(bn_size * growth_rate, growth_rate, 3, pad=1, **fmt)
        if dropout:
            self.dropout_func = nn.Dropout(p=dropout, mode="downscale_in_infer", rngs=rngs)

    def forward(self, x):
        y = self.bn_ac_func2(self.bn_ac_func1(x))
        if self.dropout:
            y = self.dropout_func(y)
        return pdx.concat([x, y], axis=self._axis)


class _DenseBlock(nn.Layer):
    def __init__(self, cin, num_layers, bn_size, growth_rate, dropout, name, *, data_format, rngs):
        super().__init__()
        self._names = tuple(f"{name}_{i + 1}" for i in range(num_layers))
        for i, sub in enumerate(self._names):
            self.add_sublayer(sub, _DenseLayer(cin + i * growth_rate, growth_rate, bn_size, dropout,
                                               data_format=data_format, rngs=rngs))

    def forward(self, x):
        for sub in self._names:
            x = getattr(self, sub)(x)
        return x


class _Transition(nn.Layer):
    def __init__(self, cin, cout, *, data_format, rngs):
        super().__init__()
        self.conv_ac_func = _BNACConv(cin, cout, 1, data_format=data_format, rngs=rngs)
        self.pool2d_avg = nn.AvgPool2D(kernel_size=2, stride=2, padding=0, data_format=data_format)

    def forward(self, x):
        return self.pool2d_avg(self.conv_ac_func(x))


class DenseNet(nn.Layer):
    """DenseNet (Paddle's `paddle.vision.models.DenseNet`): dense blocks joined by
    1x1-conv + 2x2 average-pool transitions, pre-activation BatchNorm.

    State-dict names are Paddle's (`conv1_func._conv.weight`,
    `db_conv_2.conv2_1.bn_ac_func1._batch_norm._mean`, `tr_conv2_blk...`, `out.weight`).

    Args:
      layers: 121, 161, 169, 201 or 264. Default 121.
      bn_size: bottleneck width multiplier. Default 4.
      dropout: dropout after each dense layer (0 = none). Default 0.0.
      num_classes: size of the last Linear; <= 0 leaves out the classifier. Default 1000.
      with_pool: global average pool before the classifier. Default True.
      data_format: keyword-only pdx extension, 'NCHW' (Paddle's) or 'NHWC'.
      rngs: keyword-only seed / key / `flax.nnx.Rngs`.

    Returns:
      A Layer mapping [N, 3, H, W] images to [N, num_classes] logits.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.vision import models
      >>> models.DenseNet(121, num_classes=10).eval()(jnp.zeros((1, 3, 32, 32))).shape
      (1, 10)
    """

    def __init__(self, layers=121, bn_size=4, dropout=0.0, num_classes=1000, with_pool=True, *,
                 data_format="NCHW", rngs=None):
        super().__init__()
        if layers not in _SPECS:
            raise ValueError(f"DenseNet: layers={layers!r} is not supported; use one of {sorted(_SPECS)}")
        self.num_classes = num_classes
        self.with_pool = with_pool
        self.data_format = check_data_format("DenseNet", data_format)
        rngs = as_rngs(rngs)
        fmt = dict(data_format=data_format, rngs=rngs)
        num_features, growth_rate, block_config = _SPECS[layers]
        self.block_config = block_config
        self.conv1_func = _ConvBN(3, num_features, 7, stride=2, pad=3, **fmt)
        self.pool2d_max = nn.MaxPool2D(kernel_size=3, stride=2, padding=1, data_format=data_format)
        for i, num_layers in enumerate(block_config):
            self.add_sublayer(f"db_conv_{i + 2}", _DenseBlock(num_features, num_layers, bn_size, growth_rate,
                                                              dropout, f"conv{i + 2}", **fmt))
            num_features += num_layers * growth_rate
            if i != len(block_config) - 1:
                self.add_sublayer(f"tr_conv{i + 2}_blk", _Transition(num_features, num_features // 2, **fmt))
                num_features //= 2
        self.batch_norm = nn.BatchNorm(num_features, act="relu", data_layout=data_format, rngs=rngs)
        if with_pool:
            self.pool2d_avg = nn.AdaptiveAvgPool2D(1, data_format=data_format)
        if num_classes > 0:
            stdv = 1.0 / math.sqrt(num_features)
            self.out = nn.Linear(num_features, num_classes, weight_attr=uniform_attr(stdv), rngs=rngs)

    def forward(self, x):
        x = self.pool2d_max(self.conv1_func(x))
        for i in range(len(self.block_config)):
            x = getattr(self, f"db_conv_{i + 2}")(x)
            if i != len(self.block_config) - 1:
                x = getattr(self, f"tr_conv{i + 2}_blk")(x)
        x = self.batch_norm(x)
        if self.with_pool:
            x = self.pool2d_avg(x)
        if self.num_classes > 0:
            x = self.out(flatten_features(x, self.data_format))
        return x


def _factory(layers):
    arch = f"densenet{layers}"

    def build(pretrained=False, **kwargs):
        refuse_pretrained(arch, pretrained)
        return DenseNet(layers=layers, **kwargs)

    build.__name__ = build.__qualname__ = arch
    build.__doc__ = f"""DenseNet-{layers} (Paddle's `paddle.vision.models.{arch}`).

    Args:
      pretrained: must be False (pdx downloads nothing); True raises a ValueError
        that shows how to load weights you have.
      **kwargs: `DenseNet` arguments (bn_size, dropout, num_classes, with_pool,
        data_format, rngs).

    Returns:
      A `DenseNet` with {layers} layers.

    Example:
      >>> from pdx.vision import models
      >>> net = models.{arch}(num_classes=10)
    """
    return build


densenet121 = _factory(121)
densenet161 = _factory(161)
densenet169 = _factory(169)
densenet201 = _factory(201)
densenet264 = _factory(264)
