"""pdx.vision: image models, datasets and transforms with Paddle's names.

    pdx.vision.models       LeNet, ResNet, MobileNetV2, VGG (paddle.vision.models)
    pdx.vision.datasets     Digits, DatasetFolder, ImageFolder (paddle.vision.datasets)
    pdx.vision.transforms   all of paddle.vision.transforms (PIL, numpy HWC or jax CHW in, same kind out)
"""

from pdx.vision import datasets, models, transforms

__all__: list[str] = ["datasets", "models", "transforms"]
