"""pdx.vision.models: image classification networks with Paddle's names.

LeNet, ResNet (resnet18 ... resnet152, ResNeXt, wide ResNet), MobileNetV2 and
VGG, built from `pdx.nn` layers with the constructor arguments, defaults and
state-dict names of `paddle.vision.models`, so weights saved from Paddle load
with `set_state_dict`. `pretrained=True` raises: pdx downloads nothing.
"""

from pdx.vision.models._lenet import LeNet
from pdx.vision.models._mobilenetv2 import MobileNetV2
from pdx.vision.models._mobilenetv2 import mobilenet_v2
from pdx.vision.models._resnet import BasicBlock
from pdx.vision.models._resnet import BottleneckBlock
from pdx.vision.models._resnet import ResNet
from pdx.vision.models._resnet import resnet18
from pdx.vision.models._resnet import resnet34
from pdx.vision.models._resnet import resnet50
from pdx.vision.models._resnet import resnet101
from pdx.vision.models._resnet import resnet152
from pdx.vision.models._resnet import resnext50_32x4d
from pdx.vision.models._resnet import resnext50_64x4d
from pdx.vision.models._resnet import resnext101_32x4d
from pdx.vision.models._resnet import resnext101_64x4d
from pdx.vision.models._resnet import resnext152_32x4d
from pdx.vision.models._resnet import resnext152_64x4d
from pdx.vision.models._resnet import wide_resnet50_2
from pdx.vision.models._resnet import wide_resnet101_2
from pdx.vision.models._vgg import VGG
from pdx.vision.models._vgg import make_layers
from pdx.vision.models._vgg import vgg11
from pdx.vision.models._vgg import vgg13
from pdx.vision.models._vgg import vgg16
from pdx.vision.models._vgg import vgg19

__all__ = [
    "LeNet",
    "ResNet", "BasicBlock", "BottleneckBlock",
    "resnet18", "resnet34", "resnet50", "resnet101", "resnet152",
    "resnext50_32x4d", "resnext50_64x4d", "resnext101_32x4d", "resnext101_64x4d",
    "resnext152_32x4d", "resnext152_64x4d", "wide_resnet50_2", "wide_resnet101_2",
    "MobileNetV2", "mobilenet_v2",
    "VGG", "make_layers", "vgg11", "vgg13", "vgg16", "vgg19",
]
