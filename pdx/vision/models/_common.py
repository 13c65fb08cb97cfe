"""Helpers shared by the vision models: the pretrained-weights refusal, the
data-format check, and the flatten that keeps Paddle's feature order."""

from __future__ import annotations

import pdx

_NO_DOWNLOADS = (
    "pdx.vision.models.{arch}(pretrained=True): pdx downloads nothing, so there are no "
    "pretrained weights to fetch. Build the network with pretrained=False and load weights "
    "you have with set_state_dict; the names and shapes are Paddle's, e.g.\n"
    "    net = pdx.vision.models.{arch}()\n"
    "    net.set_state_dict(safetensors.numpy.load_file('{arch}.safetensors'))\n"
    "or, from an installed paddle: "
    "net.set_state_dict({{k: v.numpy() for k, v in paddle.load('{arch}.pdparams').items()}})"
)

_FORMATS = ("NCHW", "NHWC")


def refuse_pretrained(arch: str, pretrained) -> None:
    """Raise the documented error when `pretrained` is truthy (no downloads in pdx)."""
    if pretrained:
        raise ValueError(_NO_DOWNLOADS.format(arch=arch))


def check_data_format(model: str, data_format) -> str:
    """`data_format` must be 'NCHW' (Paddle's layout) or 'NHWC'."""
    if data_format not in _FORMATS:
        raise ValueError(
            f"{model}: data_format={data_format!r} is not supported; use 'NCHW' (Paddle's default) "
            "or 'NHWC' (faster for XLA on CPU; the state dict is the same)")
    return data_format


def flatten_features(x, data_format: str):
    """Flatten [N, C, H, W] (or [N, H, W, C]) to [N, C*H*W] in Paddle's NCHW order,
    so a classifier's weights fit both layouts."""
    if data_format == "NHWC":
        x = pdx.transpose(x, [0, 3, 1, 2])
    return pdx.flatten(x, 1)


def channel_axis(data_format: str) -> int:
    """The channel axis of a 4-D activation: 1 for NCHW, 3 for NHWC."""
    return 1 if data_format == "NCHW" else 3


def uniform_attr(stdv: float):
    """A ParamAttr drawing from U(-stdv, stdv), the init several Paddle models use."""
    return pdx.ParamAttr(initializer=pdx.nn.initializer.Uniform(-stdv, stdv))
