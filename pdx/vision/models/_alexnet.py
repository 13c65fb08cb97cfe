"""AlexNet (Paddle's `paddle.vision.models.AlexNet`)."""

from __future__ import annotations

import math

import pdx
from pdx import nn
from pdx._random import as_rngs
from pdx.vision.models._common import check_data_format, flatten_features, refuse_pretrained, uniform_attr

__all__ = ["AlexNet", "alexnet"]


def _conv(cin, cout, k, stride, padding, *, data_format, rngs):
    stdv = uniform_attr(1.0 / math.sqrt(cin * k * k))
    return nn.Conv2D(cin, cout, k, stride, padding, weight_attr=stdv, bias_attr=uniform_attr(1.0 / math.sqrt(cin * k * k)),
                     data_format=data_format, rngs=rngs)


class _ConvPoolLayer(nn.Layer):
    """Conv2D (+ ReLU) + 3x3/2 max pool; children `_conv`, `_pool` as in Paddle."""

    def __init__(self, cin, cout, k, stride, padding, *, data_format, rngs):
        super().__init__()
        self.relu = nn.ReLU()
        self._conv = _conv(cin, cout, k, stride, padding, data_format=data_format, rngs=rngs)
        self._pool = nn.MaxPool2D(kernel_size=3, stride=2, padding=0, data_format=data_format)

    def forward(self, x):
        return self._pool(self.relu(self._conv(x)))


class AlexNet(nn.Layer):
    """AlexNet (Paddle's `paddle.vision.models.AlexNet`): five convolutions, three
    fully connected layers; the classifier expects a 6x6 feature map (224x224 input).

    Args:
      num_classes: size of the last Linear; <= 0 leaves out the classifier. Default 1000.
      data_format: keyword-only pdx extension, 'NCHW' (Paddle's) or 'NHWC'.
      rngs: keyword-only seed / key / `flax.nnx.Rngs` for the initial weights and dropout.

    Returns:
      A Layer mapping [N, 3, 224, 224] images to [N, num_classes] logits.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.vision import models
      >>> models.AlexNet(num_classes=10).eval()(jnp.zeros((1, 3, 224, 224))).shape
      (1, 10)
    """

    def __init__(self, num_classes=1000, *, data_format="NCHW", rngs=None):
        super().__init__()
        self.num_classes = num_classes
        self.data_format = check_data_format("AlexNet", data_format)
        rngs = as_rngs(rngs)
        fmt = dict(data_format=data_format, rngs=rngs)
        self._conv1 = _ConvPoolLayer(3, 64, 11, 4, 2, **fmt)
        self._conv2 = _ConvPoolLayer(64, 192, 5, 1, 2, **fmt)
        self._conv3 = _conv(192, 384, 3, 1, 1, **fmt)
        self._conv4 = _conv(384, 256, 3, 1, 1, **fmt)
        self._conv5 = _ConvPoolLayer(256, 256, 3, 1, 1, **fmt)
        if num_classes > 0:
            stdv = 1.0 / math.sqrt(256 * 6 * 6)
            self._drop1 = nn.Dropout(p=0.5, mode="downscale_in_infer", rngs=rngs)
            self._fc6 = nn.Linear(256 * 6 * 6, 4096, weight_attr=uniform_attr(stdv), bias_attr=uniform_attr(stdv),
                                  rngs=rngs)
            self._drop2 = nn.Dropout(p=0.5, mode="downscale_in_infer", rngs=rngs)
            self._fc7 = nn.Linear(4096, 4096, weight_attr=uniform_attr(stdv), bias_attr=uniform_attr(stdv), rngs=rngs)
            self._fc8 = nn.Linear(4096, num_classes, weight_attr=uniform_attr(stdv), bias_attr=uniform_attr(stdv),
                                  rngs=rngs)

    def forward(self, x):
        x = self._conv2(self._conv1(x))
        x = pdx.nn.functional.relu(self._conv3(x))
        x = pdx.nn.functional.relu(self._conv4(x))
        x = self._conv5(x)
        if self.num_classes > 0:
            x = self._drop1(flatten_features(x, self.data_format))
            x = self._drop2(pdx.nn.functional.relu(self._fc6(x)))
            x = self._fc8(pdx.nn.functional.relu(self._fc7(x)))
        return x


def alexnet(pretrained=False, **kwargs):
    """AlexNet (Paddle's `paddle.vision.models.alexnet`).

    Args:
      pretrained: must be False: pdx downloads nothing; True raises a ValueError
        that shows how to load weights you have.
      **kwargs: `AlexNet` arguments (num_classes, data_format, rngs).

    Returns:
      An `AlexNet`.

    Example:
      >>> from pdx.vision import models
      >>> net = models.alexnet(num_classes=10)
    """
    refuse_pretrained("alexnet", pretrained)
    return AlexNet(**kwargs)
