"""GoogLeNet (Inception v1; Paddle's `paddle.vision.models.GoogLeNet`)."""

from __future__ import annotations

import pdx
from pdx import nn
from pdx._random import as_rngs
from pdx.vision.models._common import (channel_axis, check_data_format, flatten_features, refuse_pretrained,
                                       uniform_attr)

__all__ = ["GoogLeNet", "googlenet"]

# Inception blocks: name -> (in, 1x1, 3x3 reduce, 3x3, 5x5 reduce, 5x5, pool projection)
_BLOCKS = (("_ince3a", (192, 64, 96, 128, 16, 32, 32)), ("_ince3b", (256, 128, 128, 192, 32, 96, 64)),
           ("_ince4a", (480, 192, 96, 208, 16, 48, 64)), ("_ince4b", (512, 160, 112, 224, 24, 64, 64)),
           ("_ince4c", (512, 128, 128, 256, 24, 64, 64)), ("_ince4d", (512, 112, 144, 288, 32, 64, 64)),
           ("_ince4e", (528, 256, 160, 320, 32, 128, 128)), ("_ince5a", (832, 256, 160, 320, 32, 128, 128)),
           ("_ince5b", (832, 384, 192, 384, 48, 128, 128)))


def _xavier(channels, filter_size):
    return uniform_attr((3.0 / (filter_size ** 2 * channels)) ** 0.5)


class _ConvLayer(nn.Layer):
    """Bias-free 'same' convolution (no normalization, no activation)."""

    def __init__(self, cin, cout, k, stride=1, *, data_format, rngs):
        super().__init__()
        self._conv = nn.Conv2D(cin, cout, k, stride, (k - 1) // 2, bias_attr=False, data_format=data_format,
                               rngs=rngs)

    def forward(self, x):
        return self._conv(x)


class _Inception(nn.Layer):
    """Four branches (1x1; 1x1->3x3; 1x1->5x5; 3x3 max pool->1x1), concatenated, then ReLU."""

    def __init__(self, cin, f1, f3r, f3, f5r, f5, proj, *, data_format, rngs):
        super().__init__()
        self._axis = channel_axis(data_format)
        fmt = dict(data_format=data_format, rngs=rngs)
        self._conv1 = _ConvLayer(cin, f1, 1, **fmt)
        self._conv3r = _ConvLayer(cin, f3r, 1, **fmt)
        self._conv3 = _ConvLayer(f3r, f3, 3, **fmt)
        self._conv5r = _ConvLayer(cin, f5r, 1, **fmt)
        self._conv5 = _ConvLayer(f5r, f5, 5, **fmt)
        self._pool = nn.MaxPool2D(kernel_size=3, stride=1, padding=1, data_format=data_format)
        self._convprj = _ConvLayer(cin, proj, 1, **fmt)

    def forward(self, x):
        branches = [self._conv1(x), self._conv3(self._conv3r(x)), self._conv5(self._conv5r(x)),
                    self._convprj(self._pool(x))]
        return pdx.nn.functional.relu(pdx.concat(branches, axis=self._axis))


class GoogLeNet(nn.Layer):
    """GoogLeNet (Paddle's `paddle.vision.models.GoogLeNet`): nine Inception blocks
    and two auxiliary classifiers.

    The forward returns `(out, out1, out2)`: the main logits and the two auxiliary
    heads (on inception 4a and 4d). The auxiliary heads flatten a 3x3 map, so the
    input must be about 224x224 when num_classes > 0.

    Args:
      num_classes: classes of the three heads; <= 0 leaves them out. Default 1000.
      with_pool: pool before the heads (global average; 5x5/3 average for the
        auxiliary ones). Default True.
      data_format: keyword-only pdx extension, 'NCHW' (Paddle's) or 'NHWC'.
      rngs: keyword-only seed / key / `flax.nnx.Rngs`.

    Returns:
      A Layer mapping [N, 3, 224, 224] to three [N, num_classes] outputs.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.vision import models
      >>> out, aux1, aux2 = models.GoogLeNet(num_classes=10).eval()(jnp.zeros((1, 3, 224, 224)))
      >>> out.shape, aux1.shape
      ((1, 10), (1, 10))
    """

    def __init__(self, num_classes=1000, with_pool=True, *, data_format="NCHW", rngs=None):
        super().__init__()
        self.num_classes = num_classes
        self.with_pool = with_pool
        self.data_format = check_data_format("GoogLeNet", data_format)
        rngs = as_rngs(rngs)
        fmt = dict(data_format=data_format, rngs=rngs)
        self._conv = _ConvLayer(3, 64, 7, 2, **fmt)
        self._pool = nn.MaxPool2D(kernel_size=3, stride=2, data_format=data_format)
        self._conv_1 = _ConvLayer(64, 64, 1, **fmt)
        self._conv_2 = _ConvLayer(64, 192, 3, **fmt)
        for name, cfg in _BLOCKS:
            setattr(self, name, _Inception(*cfg, **fmt))
        if with_pool:
            self._pool_5 = nn.AdaptiveAvgPool2D(1, data_format=data_format)
            self._pool_o1 = nn.AvgPool2D(kernel_size=5, stride=3, data_format=data_format)
            self._pool_o2 = nn.AvgPool2D(kernel_size=5, stride=3, data_format=data_format)
        if num_classes > 0:
            drop = dict(mode="downscale_in_infer", rngs=rngs)
            self._drop = nn.Dropout(p=0.4, **drop)
            self._fc_out = nn.Linear(1024, num_classes, weight_attr=_xavier(1024, 1), rngs=rngs)
            self._conv_o1 = _ConvLayer(512, 128, 1, **fmt)
            self._fc_o1 = nn.Linear(1152, 1024, weight_attr=_xavier(2048, 1), rngs=rngs)
            self._drop_o1 = nn.Dropout(p=0.7, **drop)
            self._out1 = nn.Linear(1024, num_classes, weight_attr=_xavier(1024, 1), rngs=rngs)
            self._conv_o2 = _ConvLayer(528, 128, 1, **fmt)
            self._fc_o2 = nn.Linear(1152, 1024, weight_attr=_xavier(2048, 1), rngs=rngs)
            self._drop_o2 = nn.Dropout(p=0.7, **drop)
            self._out2 = nn.Linear(1024, num_classes, weight_attr=_xavier(1024, 1), rngs=rngs)

    def forward(self, x):
        x = self._pool(self._conv_2(self._conv_1(self._pool(self._conv(x)))))
        x = self._pool(self._ince3b(self._ince3a(x)))
        ince4a = self._ince4a(x)
        ince4d = self._ince4d(self._ince4c(self._ince4b(ince4a)))
        x = self._pool(self._ince4e(ince4d))
        out, out1, out2 = self._ince5b(self._ince5a(x)), ince4a, ince4d
        if self.with_pool:
            out, out1, out2 = self._pool_5(out), self._pool_o1(out1), self._pool_o2(out2)
        if self.num_classes > 0:
            fmt = self.data_format
            out = self._fc_out(flatten_features(self._drop(out), fmt))
            out1 = self._fc_o1(flatten_features(self._conv_o1(out1), fmt))
            out1 = self._out1(self._drop_o1(pdx.nn.functional.relu(out1)))
            # Paddle's second auxiliary head has no ReLU after its first Linear.
            out2 = self._fc_o2(flatten_features(self._conv_o2(out2), fmt))
            out2 = self._out2(self._drop_o2(out2))
        return out, out1, out2


def googlenet(pretrained=False, **kwargs):
    """GoogLeNet (Paddle's `paddle.vision.models.googlenet`).

    Args:
      pretrained: must be False (pdx downloads nothing); True raises a ValueError
        that shows how to load weights you have.
      **kwargs: `GoogLeNet` arguments (num_classes, with_pool, data_format, rngs).

    Returns:
      A `GoogLeNet`.

    Example:
      >>> from pdx.vision import models
      >>> net = models.googlenet(num_classes=10)
    """
    refuse_pretrained("googlenet", pretrained)
    return GoogLeNet(**kwargs)
