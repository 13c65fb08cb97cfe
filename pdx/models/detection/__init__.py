"""pdx.models.detection: a small anchor-free object detector (FCOS-style) and its tools.

    FCOSConfig, PRESETS, FCOS          the detector ("tiny", "small"): backbone, FPN, shared head
    fcos_targets                       center sampling + scale-range target assignment
    FCOSOutput, FCOSTargets, FCOSLosses, Detections    typed records it returns
    box_area, box_iou, giou_loss, distance_to_box, box_to_distance    box arithmetic
    nms, batched_nms, NMSResult        greedy NMS with fixed output shapes (jits and exports)
    coco_map, DetectionMetrics         COCO-style mAP@[.5:.95] / mAP@0.5 in numpy
    make_shapes, ShapesData, SHAPE_CLASSES    a generated data set of coloured shapes

Zoo presets: "fcos-tiny", "fcos-small" (family "detection").
"""

from pdx.models._zoo import register
from pdx.models.detection._boxes import box_area
from pdx.models.detection._boxes import box_iou
from pdx.models.detection._boxes import box_to_distance
from pdx.models.detection._boxes import distance_to_box
from pdx.models.detection._boxes import giou_loss
from pdx.models.detection._config import PRESETS
from pdx.models.detection._config import FCOSConfig
from pdx.models.detection._data import SHAPE_CLASSES
from pdx.models.detection._data import ShapesData
from pdx.models.detection._data import make_shapes
from pdx.models.detection._eval import DetectionMetrics
from pdx.models.detection._eval import coco_map
from pdx.models.detection._model import FCOS
from pdx.models.detection._model import Detections
from pdx.models.detection._model import FCOSLosses
from pdx.models.detection._model import FCOSOutput
from pdx.models.detection._model import FCOSTargets
from pdx.models.detection._model import fcos_targets
from pdx.models.detection._nms import NMSResult
from pdx.models.detection._nms import batched_nms
from pdx.models.detection._nms import nms

__all__ = [
    "FCOSConfig", "PRESETS", "FCOS", "fcos_targets",
    "FCOSOutput", "FCOSTargets", "FCOSLosses", "Detections",
    "box_area", "box_iou", "giou_loss", "distance_to_box", "box_to_distance",
    "nms", "batched_nms", "NMSResult",
    "coco_map", "DetectionMetrics",
    "make_shapes", "ShapesData", "SHAPE_CLASSES",
]


def _preset_builder(preset: str):
    def build(**overrides):
        return FCOS(preset, **overrides)
    build.__name__ = f"fcos_{preset}"
    return build


def _json_config(config: FCOSConfig) -> dict:
    import dataclasses

    return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(config).items()}


for _preset in PRESETS:
    register(f"fcos-{_preset}", _preset_builder(_preset), family="detection", task="object-detection",
             config=_json_config(PRESETS[_preset]), inputs=("image:None,3,64,64:float32",),
             description=f"FCOS-style anchor-free detector ({_preset}): GroupNorm CNN, "
                         f"{len(PRESETS[_preset].strides)}-level FPN, shared head")
