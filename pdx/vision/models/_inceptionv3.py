"""Inception v3 (Paddle's `paddle.vision.models.InceptionV3`)."""

from __future__ import annotations

import functools
import math

import pdx
from pdx import nn
from pdx._random import as_rngs
from pdx.vision.models._common import (channel_axis, check_data_format, flatten_features, refuse_pretrained,
                                       uniform_attr)
from pdx.vision.ops._layers import ConvNormActivation

__all__ = ["InceptionV3", "inception_v3"]


def _cna(data_format, rngs):
    """The Conv+BN+ReLU factory every Inception convolution uses."""
    return functools.partial(ConvNormActivation, activation_layer=nn.ReLU, data_format=data_format, rngs=rngs)


class _Block(nn.Layer):
    """Shared plumbing of the Inception blocks: the channel concat."""

    def __init__(self, data_format):
        super().__init__()
        self._axis = channel_axis(data_format)

    def _cat(self, parts):
        return pdx.concat(parts, axis=self._axis)


class _Stem(_Block):
    def __init__(self, *, data_format, rngs):
        super().__init__(data_format)
        c = _cna(data_format, rngs)
        self.conv_1a_3x3 = c(3, 32, 3, stride=2, padding=0)
        self.conv_2a_3x3 = c(32, 32, 3, stride=1, padding=0)
        self.conv_2b_3x3 = c(32, 64, 3, padding=1)
        self.max_pool = nn.MaxPool2D(kernel_size=3, stride=2, padding=0, data_format=data_format)
        self.conv_3b_1x1 = c(64, 80, 1, padding=0)
        self.conv_4a_3x3 = c(80, 192, 3, padding=0)

    def forward(self, x):
        x = self.max_pool(self.conv_2b_3x3(self.conv_2a_3x3(self.conv_1a_3x3(x))))
        return self.max_pool(self.conv_4a_3x3(self.conv_3b_1x1(x)))


class _InceptionA(_Block):
    def __init__(self, cin, pool_features, *, data_format, rngs):
        super().__init__(data_format)
        c = _cna(data_format, rngs)
        self.branch1x1 = c(cin, 64, 1, padding=0)
        self.branch5x5_1 = c(cin, 48, 1, padding=0)
        self.branch5x5_2 = c(48, 64, 5, padding=2)
        self.branch3x3dbl_1 = c(cin, 64, 1, padding=0)
        self.branch3x3dbl_2 = c(64, 96, 3, padding=1)
        self.branch3x3dbl_3 = c(96, 96, 3, padding=1)
        self.branch_pool = nn.AvgPool2D(kernel_size=3, stride=1, padding=1, exclusive=False, data_format=data_format)
        self.branch_pool_conv = c(cin, pool_features, 1, padding=0)

    def forward(self, x):
        return self._cat([self.branch1x1(x), self.branch5x5_2(self.branch5x5_1(x)),
                          self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x))),
                          self.branch_pool_conv(self.branch_pool(x))])


class _InceptionB(_Block):
    def __init__(self, cin, *, data_format, rngs):
        super().__init__(data_format)
        c = _cna(data_format, rngs)
        self.branch3x3 = c(cin, 384, 3, stride=2, padding=0)
        self.branch3x3dbl_1 = c(cin, 64, 1, padding=0)
        self.branch3x3dbl_2 = c(64, 96, 3, padding=1)
        self.branch3x3dbl_3 = c(96, 96, 3, stride=2, padding=0)
        self.branch_pool = nn.MaxPool2D(kernel_size=3, stride=2, data_format=data_format)

    def forward(self, x):
        return self._cat([self.branch3x3(x), self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x))),
                          self.branch_pool(x)])


class _InceptionC(_Block):
    def __init__(self, cin, c7, *, data_format, rngs):
        super().__init__(data_format)
        c = _cna(data_format, rngs)
        self.branch1x1 = c(cin, 192, 1, padding=0)
        self.branch7x7_1 = c(cin, c7, 1, stride=1, padding=0)
        self.branch7x7_2 = c(c7, c7, (1, 7), stride=1, padding=(0, 3))
        self.branch7x7_3 = c(c7, 192, (7, 1), stride=1, padding=(3, 0))
        self.branch7x7dbl_1 = c(cin, c7, 1, padding=0)
        self.branch7x7dbl_2 = c(c7, c7, (7, 1), padding=(3, 0))
        self.branch7x7dbl_3 = c(c7, c7, (1, 7), padding=(0, 3))
        self.branch7x7dbl_4 = c(c7, c7, (7, 1), padding=(3, 0))
        self.branch7x7dbl_5 = c(c7, 192, (1, 7), padding=(0, 3))
        self.branch_pool = nn.AvgPool2D(kernel_size=3, stride=1, padding=1, exclusive=False, data_format=data_format)
        self.branch_pool_conv = c(cin, 192, 1, padding=0)

    def forward(self, x):
        b7 = self.branch7x7_3(self.branch7x7_2(self.branch7x7_1(x)))
        d = self.branch7x7dbl_1(x)
        for layer in (self.branch7x7dbl_2, self.branch7x7dbl_3, self.branch7x7dbl_4, self.branch7x7dbl_5):
            d = layer(d)
        return self._cat([self.branch1x1(x), b7, d, self.branch_pool_conv(self.branch_pool(x))])


class _InceptionD(_Block):
    def __init__(self, cin, *, data_format, rngs):
        super().__init__(data_format)
        c = _cna(data_format, rngs)
        self.branch3x3_1 = c(cin, 192, 1, padding=0)
        self.branch3x3_2 = c(192, 320, 3, stride=2, padding=0)
        self.branch7x7x3_1 = c(cin, 192, 1, padding=0)
        self.branch7x7x3_2 = c(192, 192, (1, 7), padding=(0, 3))
        self.branch7x7x3_3 = c(192, 192, (7, 1), padding=(3, 0))
        self.branch7x7x3_4 = c(192, 192, 3, stride=2, padding=0)
        self.branch_pool = nn.MaxPool2D(kernel_size=3, stride=2, data_format=data_format)

    def forward(self, x):
        b7 = self.branch7x7x3_4(self.branch7x7x3_3(self.branch7x7x3_2(self.branch7x7x3_1(x))))
        return self._cat([self.branch3x3_2(self.branch3x3_1(x)), b7, self.branch_pool(x)])


class _InceptionE(_Block):
    def __init__(self, cin, *, data_format, rngs):
        super().__init__(data_format)
        c = _cna(data_format, rngs)
        self.branch1x1 = c(cin, 320, 1, padding=0)
        self.branch3x3_1 = c(cin, 384, 1, padding=0)
        self.branch3x3_2a = c(384, 384, (1, 3), padding=(0, 1))
        self.branch3x3_2b = c(384, 384, (3, 1), padding=(1, 0))
        self.branch3x3dbl_1 = c(cin, 448, 1, padding=0)
        self.branch3x3dbl_2 = c(448, 384, 3, padding=1)
        self.branch3x3dbl_3a = c(384, 384, (1, 3), padding=(0, 1))
        self.branch3x3dbl_3b = c(384, 384, (3, 1), padding=(1, 0))
        self.branch_pool = nn.AvgPool2D(kernel_size=3, stride=1, padding=1, exclusive=False, data_format=data_format)
        self.branch_pool_conv = c(cin, 192, 1, padding=0)

    def forward(self, x):
        b3 = self.branch3x3_1(x)
        b3 = self._cat([self.branch3x3_2a(b3), self.branch3x3_2b(b3)])
        d = self.branch3x3dbl_2(self.branch3x3dbl_1(x))
        d = self._cat([self.branch3x3dbl_3a(d), self.branch3x3dbl_3b(d)])
        return self._cat([self.branch1x1(x), b3, d, self.branch_pool_conv(self.branch_pool(x))])


class InceptionV3(nn.Layer):
    """Inception v3 (Paddle's `paddle.vision.models.InceptionV3`): a stem, then
    Inception A x3, B, C x4, D, E x2, every convolution a Conv+BN+ReLU.

    Args:
      num_classes: size of the last Linear; <= 0 leaves out the classifier. Default 1000.
      with_pool: global average pool before the classifier. Default True.
      data_format: keyword-only pdx extension, 'NCHW' (Paddle's) or 'NHWC'.
      rngs: keyword-only seed / key / `flax.nnx.Rngs`.

    Returns:
      A Layer mapping [N, 3, H, W] images (H, W >= 75; 299 as trained) to logits.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.vision import models
      >>> models.InceptionV3(num_classes=10).eval()(jnp.zeros((1, 3, 75, 75))).shape
      (1, 10)
    """

    def __init__(self, num_classes=1000, with_pool=True, *, data_format="NCHW", rngs=None):
        super().__init__()
        self.num_classes = num_classes
        self.with_pool = with_pool
        self.data_format = check_data_format("InceptionV3", data_format)
        rngs = as_rngs(rngs)
        fmt = dict(data_format=data_format, rngs=rngs)
        self.inception_stem = _Stem(**fmt)
        blocks = [_InceptionA(cin, pool, **fmt) for cin, pool in ((192, 32), (256, 64), (288, 64))]
        blocks.append(_InceptionB(288, **fmt))
        blocks += [_InceptionC(768, c7, **fmt) for c7 in (128, 160, 160, 192)]
        blocks.append(_InceptionD(768, **fmt))
        blocks += [_InceptionE(cin, **fmt) for cin in (1280, 2048)]
        self.inception_block_list = nn.LayerList(blocks)
        if with_pool:
            self.avg_pool = nn.AdaptiveAvgPool2D(1, data_format=data_format)
        if num_classes > 0:
            self.dropout = nn.Dropout(p=0.2, mode="downscale_in_infer", rngs=rngs)
            stdv = 1.0 / math.sqrt(2048.0)
            self.fc = nn.Linear(2048, num_classes, weight_attr=uniform_attr(stdv), rngs=rngs)

    def forward(self, x):
        x = self.inception_stem(x)
        for block in self.inception_block_list:
            x = block(x)
        if self.with_pool:
            x = self.avg_pool(x)
        if self.num_classes > 0:
            x = self.fc(self.dropout(flatten_features(x, self.data_format).reshape(-1, 2048)))
        return x


def inception_v3(pretrained=False, **kwargs):
    """Inception v3 (Paddle's `paddle.vision.models.inception_v3`).

    Args:
      pretrained: must be False (pdx downloads nothing); True raises a ValueError
        that shows how to load weights you have.
      **kwargs: `InceptionV3` arguments (num_classes, with_pool, data_format, rngs).

    Returns:
      An `InceptionV3`.

    Example:
      >>> from pdx.vision import models
      >>> net = models.inception_v3(num_classes=10)
    """
    refuse_pretrained("inception_v3", pretrained)
    return InceptionV3(**kwargs)
