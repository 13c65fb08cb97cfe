"""pdx.vision.models: image classification networks with Paddle's names.

Every model of `paddle.vision.models`: LeNet, AlexNet, VGG, ResNet (ResNeXt,
wide ResNet), DenseNet, GoogLeNet, InceptionV3, SqueezeNet, MobileNetV1/V2/V3
and ShuffleNetV2, built from `pdx.nn` layers with the constructor arguments, defaults and
state-dict names of `paddle.vision.models`, so weights saved from Paddle load
with `set_state_dict`. `pretrained=True` raises: pdx downloads nothing.
"""

from pdx.vision.models._alexnet import AlexNet
from pdx.vision.models._alexnet import alexnet
from pdx.vision.models._densenet import DenseNet
from pdx.vision.models._densenet import densenet121
from pdx.vision.models._densenet import densenet161
from pdx.vision.models._densenet import densenet169
from pdx.vision.models._densenet import densenet201
from pdx.vision.models._densenet import densenet264
from pdx.vision.models._googlenet import GoogLeNet
from pdx.vision.models._googlenet import googlenet
from pdx.vision.models._inceptionv3 import InceptionV3
from pdx.vision.models._inceptionv3 import inception_v3
from pdx.vision.models._lenet import LeNet
from pdx.vision.models._mobilenetv1 import MobileNetV1
from pdx.vision.models._mobilenetv1 import mobilenet_v1
from pdx.vision.models._mobilenetv2 import MobileNetV2
from pdx.vision.models._mobilenetv2 import mobilenet_v2
from pdx.vision.models._mobilenetv3 import MobileNetV3Large
from pdx.vision.models._mobilenetv3 import MobileNetV3Small
from pdx.vision.models._mobilenetv3 import mobilenet_v3_large
from pdx.vision.models._mobilenetv3 import mobilenet_v3_small
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
from pdx.vision.models._shufflenetv2 import ShuffleNetV2
from pdx.vision.models._shufflenetv2 import shufflenet_v2_swish
from pdx.vision.models._shufflenetv2 import shufflenet_v2_x0_5
from pdx.vision.models._shufflenetv2 import shufflenet_v2_x0_25
from pdx.vision.models._shufflenetv2 import shufflenet_v2_x0_33
from pdx.vision.models._shufflenetv2 import shufflenet_v2_x1_0
from pdx.vision.models._shufflenetv2 import shufflenet_v2_x1_5
from pdx.vision.models._shufflenetv2 import shufflenet_v2_x2_0
from pdx.vision.models._squeezenet import SqueezeNet
from pdx.vision.models._squeezenet import squeezenet1_0
from pdx.vision.models._squeezenet import squeezenet1_1
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
    "MobileNetV1", "mobilenet_v1",
    "MobileNetV3Small", "MobileNetV3Large", "mobilenet_v3_small", "mobilenet_v3_large",
    "DenseNet", "densenet121", "densenet161", "densenet169", "densenet201", "densenet264",
    "AlexNet", "alexnet",
    "InceptionV3", "inception_v3",
    "SqueezeNet", "squeezenet1_0", "squeezenet1_1",
    "GoogLeNet", "googlenet",
    "ShuffleNetV2", "shufflenet_v2_x0_25", "shufflenet_v2_x0_33", "shufflenet_v2_x0_5", "shufflenet_v2_x1_0",
    "shufflenet_v2_x1_5", "shufflenet_v2_x2_0", "shufflenet_v2_swish",
]
