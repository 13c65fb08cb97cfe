"""pdx.models.ocr: text recognition (CRNN + CTC) and text detection (DB), with synthetic rendered data.

    CRNN, standardize                            conv -> height collapsed -> BiLSTM -> classes + blank
    ctc_greedy_decode, ctc_beam_search_decode    best path / prefix beam search (host, numpy)
    edit_distance, recognition_metrics           character and word accuracy
    DBNet, differentiable_binarization           probability + threshold maps, B = sigmoid(k (P - T))
    db_loss, balanced_bce_loss, dice_loss, masked_l1_loss
    db_targets, stack_targets, shrink_boxes, unclip_boxes, shrink_offset
    boxes_from_prob_map, detection_metrics
    make_recognition_batch, make_detection_batch, render_line, render_scene, random_strings,
    encode_texts, decode_ids                     synthetic data from Pillow's bundled font (deterministic from a seed)

Zoo presets: "crnn-tiny" (text-recognition), "db-tiny" (text-detection).
"""

from pdx.models._zoo import register
from pdx.models.ocr._boxes import (
    DBTargets,
    DetectionMetrics,
    boxes_from_prob_map,
    db_targets,
    detection_metrics,
    shrink_boxes,
    shrink_offset,
    stack_targets,
    unclip_boxes,
)
from pdx.models.ocr._crnn import CRNN, standardize
from pdx.models.ocr._ctc import (
    RecognitionMetrics,
    ctc_beam_search_decode,
    ctc_greedy_decode,
    edit_distance,
    recognition_metrics,
)
from pdx.models.ocr._data import (
    DEFAULT_ALPHABET,
    DetectionBatch,
    RecognitionBatch,
    decode_ids,
    encode_texts,
    make_detection_batch,
    make_recognition_batch,
    random_strings,
    render_line,
    render_scene,
)
from pdx.models.ocr._db import (
    DBNet,
    balanced_bce_loss,
    db_loss,
    dice_loss,
    differentiable_binarization,
    masked_l1_loss,
)

__all__ = [
    "CRNN",
    "DBNet",
    "DBTargets",
    "DEFAULT_ALPHABET",
    "DetectionBatch",
    "DetectionMetrics",
    "RecognitionBatch",
    "RecognitionMetrics",
    "balanced_bce_loss",
    "boxes_from_prob_map",
    "ctc_beam_search_decode",
    "ctc_greedy_decode",
    "db_loss",
    "db_targets",
    "decode_ids",
    "detection_metrics",
    "dice_loss",
    "differentiable_binarization",
    "edit_distance",
    "encode_texts",
    "make_detection_batch",
    "make_recognition_batch",
    "masked_l1_loss",
    "random_strings",
    "recognition_metrics",
    "render_line",
    "render_scene",
    "shrink_boxes",
    "shrink_offset",
    "stack_targets",
    "standardize",
    "unclip_boxes",
]

_CRNN_TINY = {"num_classes": len(DEFAULT_ALPHABET) + 1, "channels": (16, 32, 64, 64), "hidden_size": 64}
_DB_TINY = {"channels": (16, 32, 64), "inner_channels": 16}


def _crnn_tiny(**overrides):
    return CRNN(**{**_CRNN_TINY, **overrides})


def _db_tiny(**overrides):
    return DBNet(**{**_DB_TINY, **overrides})


register("crnn-tiny", _crnn_tiny, family="ocr", task="text-recognition",
         config={k: list(v) if isinstance(v, tuple) else v for k, v in _CRNN_TINY.items()},
         description="CRNN text recognizer (4 conv stages, BiLSTM 64, CTC) for 32-pixel-high lines, "
                     "digits + lower-case letters", inputs=("image:None,1,32,128:float32",))
register("db-tiny", _db_tiny, family="ocr", task="text-detection",
         config={k: list(v) if isinstance(v, tuple) else v for k, v in _DB_TINY.items()},
         description="DB text detector (3-stage conv backbone, FPN at 1/2, probability + threshold heads)",
         inputs=("image:None,1,128,128:float32",))
