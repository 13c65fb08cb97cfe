"""pdx.vision.ops: Paddle's detection and vision operators (`paddle.vision.ops`),
written as JAX compositions and checked against paddle.

    yolo_box, yolo_loss             YOLOv3 head decoding and loss
    prior_box, box_coder            SSD priors, center-size box encoding
    roi_align, roi_pool, psroi_pool RoI pooling (+ RoIAlign, RoIPool, PSRoIPool layers)
    deform_conv2d, DeformConv2D     deformable convolution v1 / v2 (mask)
    nms, matrix_nms                 non-maximum suppression
    matrix_nms_padded               matrix_nms with fixed shapes, for compiled code (pdx's)
    generate_proposals              RPN proposals
    distribute_fpn_proposals        RoIs to FPN levels
    read_file, decode_jpeg          file bytes, JPEG decoding on the host
    ConvNormActivation              Conv2D + norm + activation block of the vision models

Under `pdx.jit`: the fixed-shape ops (yolo_box, yolo_loss, prior_box,
box_coder, roi_align with sampling_ratio > 0, roi_pool, psroi_pool,
deform_conv2d) trace and compile; nms, matrix_nms, generate_proposals and
distribute_fpn_proposals return as many boxes as the data leaves, so they run
eagerly and say so when traced (`pdx.models.detection.nms` is the fixed-shape
NMS for compiled code).
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
from pdx.vision.ops._nms import matrix_nms_padded
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

__all__ = [
    "yolo_loss", "yolo_box", "prior_box", "box_coder",
    "deform_conv2d", "DeformConv2D",
    "distribute_fpn_proposals", "generate_proposals",
    "read_file", "decode_jpeg",
    "roi_pool", "RoIPool", "psroi_pool", "PSRoIPool", "roi_align", "RoIAlign",
    "nms", "matrix_nms", "matrix_nms_padded",
    "ConvNormActivation",
]
