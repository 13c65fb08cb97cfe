"""pdx.vision.ops: detection and vision operators with Paddle's names
(`paddle.vision.ops`), written as JAX compositions.

    ConvNormActivation   Conv2D + norm + activation block used by the vision models
"""

from pdx.vision.ops._deform import DeformConv2D
from pdx.vision.ops._deform import deform_conv2d
from pdx.vision.ops._layers import ConvNormActivation
from pdx.vision.ops._roi import PSRoIPool
from pdx.vision.ops._roi import RoIAlign
from pdx.vision.ops._roi import RoIPool
from pdx.vision.ops._roi import psroi_pool
from pdx.vision.ops._roi import roi_align
from pdx.vision.ops._roi import roi_pool

__all__ = ["ConvNormActivation", "deform_conv2d", "DeformConv2D", "roi_align", "RoIAlign", "roi_pool", "RoIPool", "psroi_pool", "PSRoIPool"]
