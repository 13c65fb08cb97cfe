"""FCOSConfig: the hyperparameters of the anchor-free detector, and its named presets."""

from __future__ import annotations

import dataclasses

__all__ = ["FCOSConfig", "PRESETS"]


@dataclasses.dataclass(frozen=True)
class FCOSConfig:
    """Hyperparameters of `FCOS`.

    The backbone has a stride-2 stem and one stride-2 stage per entry after
    the first of `backbone_channels`; every stage output is a pyramid level,
    so level i has stride 2 ** (i + 2) (4, 8, 16 with four entries).
    """

    num_classes: int = 3                                   # object classes (no background class: sigmoid scores)
    in_channels: int = 3                                   # image channels
    backbone_channels: tuple = (16, 32, 64, 96)            # stem, then one stage (two 3x3 convs) per level
    fpn_channels: int = 32                                 # channels of the feature pyramid and the head
    head_convs: int = 2                                    # 3x3 conv + GroupNorm + ReLU layers in each head tower
    norm_groups: int = 8                                   # GroupNorm groups everywhere
    regress_bounds: tuple = (0.0, 8.0, 16.0, 1e8)          # level i takes objects whose largest side distance is in [b_i, b_i+1]
    center_radius: float = 1.5                             # center sampling: positives lie within radius * stride of the box center
    focal_alpha: float = 0.25                              # sigmoid focal loss alpha
    focal_gamma: float = 2.0                               # sigmoid focal loss gamma
    prior_prob: float = 0.01                               # initial foreground probability of the class logits
    score_threshold: float = 0.05                          # detect(): scores at or below are dropped
    pre_nms_top_k: int = 100                               # detect(): best (location, class) pairs fed to NMS
    nms_iou: float = 0.6                                   # detect(): per-class NMS IoU threshold
    max_detections: int = 20                               # detect(): fixed number of output slots per image

    @property
    def strides(self) -> tuple:
        return tuple(2 ** (i + 2) for i in range(len(self.backbone_channels) - 1))

    def __post_init__(self):
        levels = len(self.backbone_channels) - 1
        if levels < 1:
            raise ValueError(f"FCOSConfig: backbone_channels={self.backbone_channels!r} needs a stem and >= 1 stage")
        if len(self.regress_bounds) != levels + 1:
            raise ValueError(f"FCOSConfig: regress_bounds={self.regress_bounds!r} must have {levels + 1} entries "
                             f"(one more than the {levels} pyramid levels)")
        if self.num_classes < 1:
            raise ValueError(f"FCOSConfig: num_classes={self.num_classes!r} must be >= 1")
        if self.fpn_channels % self.norm_groups or any(c % self.norm_groups for c in self.backbone_channels):
            raise ValueError(f"FCOSConfig: every channel count ({self.backbone_channels}, fpn {self.fpn_channels}) "
                             f"must be divisible by norm_groups={self.norm_groups}")
        if self.max_detections > self.pre_nms_top_k:
            raise ValueError(f"FCOSConfig: max_detections={self.max_detections} must be <= "
                             f"pre_nms_top_k={self.pre_nms_top_k}")


PRESETS = {
    "tiny": FCOSConfig(),
    "small": FCOSConfig(backbone_channels=(16, 32, 64, 128, 128), fpn_channels=64, head_convs=3,
                        regress_bounds=(0.0, 8.0, 16.0, 32.0, 1e8)),
}
