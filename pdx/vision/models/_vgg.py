"""VGG (Paddle's `paddle.vision.models.VGG`)."""

from __future__ import annotations

from pdx import nn
from pdx._random import as_rngs
from pdx.vision.models._common import check_data_format, flatten_features, refuse_pretrained

__all__ = ["VGG", "make_layers", "vgg11", "vgg13", "vgg16", "vgg19"]

# Output channels of each 3x3 convolution, 'M' for a 2x2 max pool (the paper's configs A, B, D, E).
_CFGS = {
    "A": (64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"),
    "B": (64, 64, "M", 128, 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"),
    "D": (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"),
    "E": (64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M",
          512, 512, 512, 512, "M"),
}


def make_layers(cfg, batch_norm=False, *, data_format="NCHW", rngs=None):
    """VGG's feature extractor from a config list (Paddle's `vgg.make_layers`).

    Args:
      cfg: list of output channels of 3x3 convolutions (padding 1) and 'M' for a
        2x2 max pool; the input has 3 channels.
      batch_norm: put a BatchNorm2D after each convolution.
      data_format: keyword-only, 'NCHW' or 'NHWC'.
      rngs: keyword-only seed / key / `flax.nnx.Rngs` for the initial weights.

    Returns:
      An `nn.Sequential` of Conv2D [BatchNorm2D] ReLU ... MaxPool2D.

    Example:
      >>> from pdx.vision import models
      >>> len(models.make_layers([8, "M"], batch_norm=True))
      4
    """
    check_data_format("make_layers", data_format)
    rngs = as_rngs(rngs)
    layers, in_channels = [], 3
    for v in cfg:
        if v == "M":
            layers.append(nn.MaxPool2D(kernel_size=2, stride=2, data_format=data_format))
            continue
        layers.append(nn.Conv2D(in_channels, v, kernel_size=3, padding=1, data_format=data_format, rngs=rngs))
        if batch_norm:
            layers.append(nn.BatchNorm2D(v, data_format=data_format, rngs=rngs))
        layers.append(nn.ReLU())
        in_channels = v
    return nn.Sequential(*layers)


class VGG(nn.Layer):
    """VGG (Paddle's `paddle.vision.models.VGG`): a convolutional feature
    extractor, adaptive average pooling to 7x7 and three Linear layers
    (25088 -> 4096 -> 4096 -> num_classes) with ReLU and dropout.

    State-dict names and shapes are Paddle's (`features.0.weight`,
    `classifier.0.weight`, ...).

    Args:
      features: the feature Layer, usually from `make_layers` (512 output channels).
      num_classes: size of the last Linear; <= 0 leaves out the classifier. Default 1000.
      with_pool: adaptive-average-pool to 7x7 before the classifier. Default True.
      data_format: keyword-only pdx extension: 'NCHW' (Paddle's) or 'NHWC'; must
        match the one `features` was built with. The classifier sees features
        in Paddle's NCHW order either way, so the state dict is the same.
      rngs: keyword-only seed / key / `flax.nnx.Rngs` for the classifier's
        initial weights and dropout; default: the global generator (`pdx.seed`).

    Returns:
      A Layer mapping [N, 3, H, W] images to [N, num_classes] logits.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.vision.models import VGG, make_layers
      >>> net = VGG(make_layers([8, "M", 512, "M"]), num_classes=10).eval()
      >>> net(jnp.zeros((1, 3, 16, 16))).shape
      (1, 10)
    """

    def __init__(self, features, num_classes=1000, with_pool=True, *, data_format="NCHW", rngs=None):
        super().__init__()
        self.features = features
        self.num_classes = num_classes
        self.with_pool = with_pool
        self.data_format = check_data_format("VGG", data_format)
        rngs = as_rngs(rngs)
        if with_pool:
            self.avgpool = nn.AdaptiveAvgPool2D((7, 7), data_format=data_format)
        if num_classes > 0:
            self.classifier = nn.Sequential(
                nn.Linear(512 * 7 * 7, 4096, rngs=rngs),
                nn.ReLU(),
                nn.Dropout(rngs=rngs),
                nn.Linear(4096, 4096, rngs=rngs),
                nn.ReLU(),
                nn.Dropout(rngs=rngs),
                nn.Linear(4096, num_classes, rngs=rngs),
            )

    def forward(self, x):
        x = self.features(x)
        if self.with_pool:
            x = self.avgpool(x)
        if self.num_classes > 0:
            x = self.classifier(flatten_features(x, self.data_format))
        return x


def _vgg(arch, cfg, batch_norm, pretrained, data_format="NCHW", rngs=None, **kwargs):
    refuse_pretrained(arch, pretrained)
    rngs = as_rngs(rngs)
    features = make_layers(_CFGS[cfg], batch_norm=batch_norm, data_format=data_format, rngs=rngs)
    return VGG(features, data_format=data_format, rngs=rngs, **kwargs)


_FACTORY_DOC = """VGG {depth}-layer model (Paddle's `paddle.vision.models.{arch}`).

    Args:
      pretrained: must be False: pdx downloads nothing. Load weights you have with
        `net.set_state_dict(...)` (Paddle's names and shapes); True raises a
        ValueError that shows how.
      batch_norm: put a BatchNorm2D after each convolution. Default False.
      **kwargs: `VGG` arguments: num_classes=1000, with_pool=True, and the
        keyword-only pdx extensions data_format='NCHW' and rngs=None.

    Returns:
      A `VGG`.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.vision import models
      >>> net = models.{arch}(num_classes=10).eval()
      >>> net(jnp.zeros((1, 3, 32, 32))).shape
      (1, 10)
    """


def _factory(arch, cfg, depth):
    def build(pretrained=False, batch_norm=False, **kwargs):
        return _vgg(arch, cfg, batch_norm, pretrained, **kwargs)

    build.__name__ = build.__qualname__ = arch
    build.__doc__ = _FACTORY_DOC.format(depth=depth, arch=arch)
    return build


vgg11 = _factory("vgg11", "A", 11)
vgg13 = _factory("vgg13", "B", 13)
vgg16 = _factory("vgg16", "D", 16)
vgg19 = _factory("vgg19", "E", 19)
