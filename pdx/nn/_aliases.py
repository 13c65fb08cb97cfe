"""Paddle 3.3's PyTorch-style spellings in `paddle.nn`, bound to the same objects.

`pdx.nn.Conv2d is pdx.nn.Conv2D`, `pdx.nn.Module is pdx.nn.Layer`, ... exactly
as in Paddle, so isinstance checks and state_dicts do not depend on the spelling.
"""

from __future__ import annotations

from pdx.nn._activation import Silu
from pdx.nn._container import LayerDict, LayerList
from pdx.nn._conv import Conv1D, Conv2D, Conv3D
from pdx.nn._layer import Layer
from pdx.nn._padding import (
    CircularPad1D, CircularPad2D, CircularPad3D, ConstantPad1D, ConstantPad2D, ConstantPad3D, ReflectionPad1D,
    ReflectionPad2D, ReflectionPad3D, ReplicationPad1D, ReplicationPad2D, ReplicationPad3D, ZeroPad1D, ZeroPad2D,
    ZeroPad3D,
)
from pdx.nn._pooling import (
    AdaptiveAvgPool1D, AdaptiveAvgPool2D, AdaptiveAvgPool3D, AdaptiveMaxPool1D, AdaptiveMaxPool2D, AdaptiveMaxPool3D,
)
from pdx.nn._unpool_lp_fractional import LPPool1D, LPPool2D, MaxUnPool1D, MaxUnPool2D, MaxUnPool3D
from pdx.nn._vision import UpsamplingBilinear2D, UpsamplingNearest2D

__all__ = [
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
    "AdaptiveMaxPool3d", "CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d",
    "ConstantPad3d", "Conv1d", "Conv2d", "Conv3d", "LPPool1d", "LPPool2d", "MaxUnpool1d", "MaxUnpool2d",
    "MaxUnpool3d", "Module", "ModuleDict", "ModuleList", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
    "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "SiLU", "UpsamplingBilinear2d",
    "UpsamplingNearest2d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d",
]

AdaptiveAvgPool1d = AdaptiveAvgPool1D
AdaptiveAvgPool2d = AdaptiveAvgPool2D
AdaptiveAvgPool3d = AdaptiveAvgPool3D
AdaptiveMaxPool1d = AdaptiveMaxPool1D
AdaptiveMaxPool2d = AdaptiveMaxPool2D
AdaptiveMaxPool3d = AdaptiveMaxPool3D
CircularPad1d = CircularPad1D
CircularPad2d = CircularPad2D
CircularPad3d = CircularPad3D
ConstantPad1d = ConstantPad1D
ConstantPad2d = ConstantPad2D
ConstantPad3d = ConstantPad3D
Conv1d = Conv1D
Conv2d = Conv2D
Conv3d = Conv3D
LPPool1d = LPPool1D
LPPool2d = LPPool2D
MaxUnpool1d = MaxUnPool1D
MaxUnpool2d = MaxUnPool2D
MaxUnpool3d = MaxUnPool3D
Module = Layer
ModuleDict = LayerDict
ModuleList = LayerList
ReflectionPad1d = ReflectionPad1D
ReflectionPad2d = ReflectionPad2D
ReflectionPad3d = ReflectionPad3D
ReplicationPad1d = ReplicationPad1D
ReplicationPad2d = ReplicationPad2D
ReplicationPad3d = ReplicationPad3D
SiLU = Silu
UpsamplingBilinear2d = UpsamplingBilinear2D
UpsamplingNearest2d = UpsamplingNearest2D
ZeroPad1d = ZeroPad1D
ZeroPad2d = ZeroPad2D
ZeroPad3d = ZeroPad3D
