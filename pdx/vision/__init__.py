"""pdx.vision: image models, datasets and transforms with Paddle's names.

    pdx.vision.models       every paddle.vision.models network (LeNet ... ShuffleNetV2)
    pdx.vision.ops          detection operators: nms, roi_align, yolo_box, deform_conv2d, ... (paddle.vision.ops)
    pdx.vision.datasets     Digits, DatasetFolder, ImageFolder (paddle.vision.datasets)
    pdx.vision.transforms   all of paddle.vision.transforms (PIL, numpy HWC or jax CHW in, same kind out)

Each loads on first use: `from pdx.vision import transforms` (numpy only, what
a DataLoader worker needs) does not import the models and their layers.
"""

import importlib as _importlib

__all__: list[str] = ["datasets", "models", "ops", "transforms"]


def __getattr__(name: str):
    if name in __all__:
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
