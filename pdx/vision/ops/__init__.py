"""pdx.vision.ops: detection and vision operators with Paddle's names
(`paddle.vision.ops`), written as JAX compositions.

    ConvNormActivation   Conv2D + norm + activation block used by the vision models
"""

from pdx.vision.ops._boxes import box_coder
from pdx.vision.ops._boxes import prior_box
from pdx.vision.ops._boxes import yolo_box
from pdx.vision.ops._deform import DeformConv2D
from pdx.vision.ops._deform import deform_conv2d
from pdx.vision.ops._image import decode_jpeg
from pdx.vision.ops._image import read_file
from pdx.vision.ops._layers import ConvNormActivation
from pdx.vision.ops._nms import matrix_nms
from pdx.vision.ops._nms import nms
from pdx.vision.ops._proposals import distribute_fpn_proposals
from pdx.vision.ops._proposals import generate_proposals
from pdx.vision.ops._roi import PSRoIPool
from pdx.vision.ops._roi import RoIAlign
from pdx.vision.ops._roi import RoIPool
from pdx.vision.ops._roi import psroi_pool
from pdx.vision.ops._roi import roi_align
from pdx.vision.ops._roi import roi_pool
from pdx.vision.ops._yolo_loss import yolo_loss

__all__ = ["ConvNormActivation", "yolo_loss", "read_file", "decode_jpeg", "generate_proposals", "distribute_fpn_proposals", "nms", "matrix_nms", "box_coder", "prior_box", "yolo_box", "deform_conv2d", "DeformConv2D", "roi_align", "RoIAlign", "roi_pool", "RoIPool", "psroi_pool", "PSRoIPool"]
