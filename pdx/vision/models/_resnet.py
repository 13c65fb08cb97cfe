"""ResNet, ResNeXt and wide ResNet (Paddle's `paddle.vision.models.resnet`)."""

from __future__ import annotations

import functools

from pdx import nn
from pdx._random import as_rngs
from pdx.vision.models._common import check_data_format, flatten_features, refuse_pretrained

__all__ = ["BasicBlock", "BottleneckBlock", "ResNet", "resnet18", "resnet34", "resnet50", "resnet101",
           "resnet152", "resnext50_32x4d", "resnext50_64x4d", "resnext101_32x4d", "resnext101_64x4d",
           "resnext152_32x4d", "resnext152_64x4d", "wide_resnet50_2", "wide_resnet101_2"]

_BLOCKS_PER_STAGE = {18: (2, 2, 2, 2), 34: (3, 4, 6, 3), 50: (3, 4, 6, 3), 101: (3, 4, 23, 3),
                     152: (3, 8, 36, 3)}


def _default_norm(norm_layer, data_format: str, rngs):
    if norm_layer is not None:
        return norm_layer
    return functools.partial(nn.BatchNorm2D, data_format=data_format, rngs=rngs)


class BasicBlock(nn.Layer):
    """Two 3x3 convolutions with a residual connection (ResNet-18/34's block).

    Args:
      inplanes: input channels.
      planes: output channels.
      stride: stride of the first convolution.
      downsample: a Layer applied to the input of the shortcut, or None.
      groups, base_width: accepted for the block interface and ignored, as in Paddle.
      dilation: must be 1 (as in Paddle).
      norm_layer: callable `num_features -> Layer`; default `nn.BatchNorm2D`.
      data_format: keyword-only, 'NCHW' or 'NHWC'.
      rngs: keyword-only seed / key / `flax.nnx.Rngs` for the initial weights.

    Returns:
      A Layer mapping [N, inplanes, H, W] to [N, planes, H/stride, W/stride].

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.vision import models
      >>> models.BasicBlock(8, 8)(jnp.zeros((1, 8, 4, 4))).shape
      (1, 8, 4, 4)
    """

    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1, base_width=64, dilation=1,
                 norm_layer=None, *, data_format="NCHW", rngs=None):
        super().__init__()
        if dilation > 1:
            raise NotImplementedError(f"BasicBlock: dilation={dilation} is not supported (as in Paddle); use 1")
        rngs = as_rngs(rngs)
        norm_layer = _default_norm(norm_layer, data_format, rngs)
        conv = functools.partial(nn.Conv2D, bias_attr=False, data_format=data_format, rngs=rngs)
        self.conv1 = conv(inplanes, planes, 3, padding=1, stride=stride)
        self.bn1 = norm_layer(planes)
        self.relu = nn.ReLU()
        self.conv2 = conv(planes, planes, 3, padding=1)
        self.bn2 = norm_layer(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class BottleneckBlock(nn.Layer):
    """1x1 reduce, 3x3 (grouped) and 1x1 expand convolutions with a residual
    connection (ResNet-50/101/152's block; output channels are `planes * 4`).

    Args:
      inplanes: input channels.
      planes: bottleneck channels before the width factor; output is `planes * 4`.
      stride: stride of the 3x3 convolution.
      downsample: a Layer applied to the input of the shortcut, or None.
      groups: groups of the 3x3 convolution (ResNeXt).
      base_width: width per group; the 3x3 has `int(planes * base_width / 64) * groups` channels.
      dilation: dilation (and padding) of the 3x3 convolution.
      norm_layer: callable `num_features -> Layer`; default `nn.BatchNorm2D`.
      data_format: keyword-only, 'NCHW' or 'NHWC'.
      rngs: keyword-only seed / key / `flax.nnx.Rngs` for the initial weights.

    Returns:
      A Layer mapping [N, inplanes, H, W] to [N, 4 * planes, H/stride, W/stride].

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.vision import models
      >>> models.BottleneckBlock(32, 8)(jnp.zeros((1, 32, 4, 4))).shape
      (1, 32, 4, 4)
    """

    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1, base_width=64, dilation=1,
                 norm_layer=None, *, data_format="NCHW", rngs=None):
        super().__init__()
        rngs = as_rngs(rngs)
        norm_layer = _default_norm(norm_layer, data_format, rngs)
        conv = functools.partial(nn.Conv2D, bias_attr=False, data_format=data_format, rngs=rngs)
        width = int(planes * (base_width / 64.0)) * groups
        self.conv1 = conv(inplanes, width, 1)
        self.bn1 = norm_layer(width)
        self.conv2 = conv(width, width, 3, padding=dilation, stride=stride, groups=groups, dilation=dilation)
        self.bn2 = norm_layer(width)
        self.conv3 = conv(width, planes * self.expansion, 1)
        self.bn3 = norm_layer(planes * self.expansion)
        self.relu = nn.ReLU()
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


class ResNet(nn.Layer):
    """ResNet (Paddle's `paddle.vision.models.ResNet`): a 7x7 stem, four stages of
    blocks, global average pooling and a Linear classifier.

    State-dict names and shapes are Paddle's (`conv1.weight`, `layer1.0.bn1._mean`,
    `layer2.0.downsample.0.weight`, `fc.weight`, ...), so
    `net.set_state_dict({k: v.numpy() for k, v in paddle_net.state_dict().items()})`
    loads Paddle weights and gives Paddle's outputs.

    Args:
      block: `BasicBlock` or `BottleneckBlock`.
      depth: 18, 34, 50, 101 or 152 (blocks per stage as in the paper). Default 50.
      width: base width per group of the bottleneck 3x3 convolutions. Default 64.
      num_classes: size of the last Linear; <= 0 leaves it out. Default 1000.
      with_pool: average-pool to 1x1 before the classifier. Default True.
      groups: groups of the bottleneck 3x3 convolutions (ResNeXt). Default 1.
      data_format: keyword-only pdx extension: 'NCHW' (Paddle's) or 'NHWC', which
        XLA runs faster on CPU. Inputs and feature maps use it; the state dict is the same.
      rngs: keyword-only seed / key / `flax.nnx.Rngs` for the initial weights;
        default: the global generator (`pdx.seed`).

    Returns:
      A Layer mapping [N, 3, H, W] images to [N, num_classes] logits.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.vision.models import ResNet, BasicBlock
      >>> ResNet(BasicBlock, 18, num_classes=10)(jnp.zeros((1, 3, 32, 32))).shape
      (1, 10)
    """

    def __init__(self, block, depth=50, width=64, num_classes=1000, with_pool=True, groups=1, *,
                 data_format="NCHW", rngs=None):
        super().__init__()
        if depth not in _BLOCKS_PER_STAGE:
            raise ValueError(f"ResNet: depth={depth!r} is not supported; use one of {sorted(_BLOCKS_PER_STAGE)}")
        if not (isinstance(block, type) and issubclass(block, nn.Layer) and hasattr(block, "expansion")):
            raise TypeError(f"ResNet: block must be BasicBlock or BottleneckBlock; got {block!r}")
        stages = _BLOCKS_PER_STAGE[depth]
        self.groups = groups
        self.base_width = width
        self.num_classes = num_classes
        self.with_pool = with_pool
        self.data_format = check_data_format("ResNet", data_format)
        rngs = as_rngs(rngs)
        norm_layer = functools.partial(nn.BatchNorm2D, data_format=data_format, rngs=rngs)
        self.inplanes = 64
        self.dilation = 1

        self.conv1 = nn.Conv2D(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias_attr=False,
                               data_format=data_format, rngs=rngs)
        self.bn1 = norm_layer(self.inplanes)
        self.relu = nn.ReLU()
        self.maxpool = nn.MaxPool2D(kernel_size=3, stride=2, padding=1, data_format=data_format)
        make = functools.partial(self._make_layer, block, norm_layer=norm_layer, rngs=rngs)
        self.layer1 = make(64, stages[0])
        self.layer2 = make(128, stages[1], stride=2)
        self.layer3 = make(256, stages[2], stride=2)
        self.layer4 = make(512, stages[3], stride=2)
        if with_pool:
            self.avgpool = nn.AdaptiveAvgPool2D((1, 1), data_format=data_format)
        if num_classes > 0:
            self.fc = nn.Linear(512 * block.expansion, num_classes, rngs=rngs)

    def _make_layer(self, block, planes, blocks, stride=1, dilate=False, *, norm_layer, rngs):
        fmt = dict(data_format=self.data_format, rngs=rngs)
        downsample = None
        previous_dilation = self.dilation
        if dilate:
            self.dilation *= stride
            stride = 1
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                nn.Conv2D(self.inplanes, planes * block.expansion, 1, stride=stride, bias_attr=False, **fmt),
                norm_layer(planes * block.expansion),
            )
        layers = [block(self.inplanes, planes, stride, downsample, self.groups, self.base_width,
                        previous_dilation, norm_layer, **fmt)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes, groups=self.groups, base_width=self.base_width,
                                norm_layer=norm_layer, **fmt))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        if self.with_pool:
            x = self.avgpool(x)
        if self.num_classes > 0:
            x = self.fc(flatten_features(x, self.data_format))
        return x


def _resnet(arch, block, depth, pretrained, **kwargs):
    refuse_pretrained(arch, pretrained)
    return ResNet(block, depth, **kwargs)


_FACTORY_DOC = """{title} (Paddle's `paddle.vision.models.{arch}`).

    Args:
      pretrained: must be False: pdx downloads nothing. Load weights you have with
        `net.set_state_dict(...)` (Paddle's names and shapes); True raises a
        ValueError that shows how.
      **kwargs: `ResNet` arguments: num_classes=1000, with_pool=True, and the
        keyword-only pdx extensions data_format='NCHW' and rngs=None.{fixed}

    Returns:
      A `ResNet`.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.vision import models
      >>> net = models.{arch}(num_classes=10)
      >>> net.eval()(jnp.zeros((1, 3, 32, 32))).shape
      (1, 10)
    """


def _factory(arch, block, depth, title, groups=None, width=None):
    def build(pretrained=False, **kwargs):
        if groups is not None:
            kwargs["groups"] = groups
        if width is not None:
            kwargs["width"] = width
        return _resnet(arch, block, depth, pretrained, **kwargs)

    fixed = "" if groups is None else f" groups={groups} and width={width} are fixed, as in Paddle."
    if groups is None and width is not None:
        fixed = f" width={width} is fixed, as in Paddle."
    build.__name__ = build.__qualname__ = arch
    build.__doc__ = _FACTORY_DOC.format(title=title, arch=arch, fixed=fixed)
    return build


resnet18 = _factory("resnet18", BasicBlock, 18, "ResNet-18")
resnet34 = _factory("resnet34", BasicBlock, 34, "ResNet-34")
resnet50 = _factory("resnet50", BottleneckBlock, 50, "ResNet-50")
resnet101 = _factory("resnet101", BottleneckBlock, 101, "ResNet-101")
resnet152 = _factory("resnet152", BottleneckBlock, 152, "ResNet-152")
resnext50_32x4d = _factory("resnext50_32x4d", BottleneckBlock, 50, "ResNeXt-50 32x4d", 32, 4)
resnext50_64x4d = _factory("resnext50_64x4d", BottleneckBlock, 50, "ResNeXt-50 64x4d", 64, 4)
resnext101_32x4d = _factory("resnext101_32x4d", BottleneckBlock, 101, "ResNeXt-101 32x4d", 32, 4)
resnext101_64x4d = _factory("resnext101_64x4d", BottleneckBlock, 101, "ResNeXt-101 64x4d", 64, 4)
resnext152_32x4d = _factory("resnext152_32x4d", BottleneckBlock, 152, "ResNeXt-152 32x4d", 32, 4)
resnext152_64x4d = _factory("resnext152_64x4d", BottleneckBlock, 152, "ResNeXt-152 64x4d", 64, 4)
wide_resnet50_2 = _factory("wide_resnet50_2", BottleneckBlock, 50, "Wide ResNet-50-2", width=128)
wide_resnet101_2 = _factory("wide_resnet101_2", BottleneckBlock, 101, "Wide ResNet-101-2", width=128)
