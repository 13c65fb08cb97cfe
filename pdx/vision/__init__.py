"""pdx.vision: image models, datasets and transforms with Paddle's names.

    pdx.vision.models       LeNet, ResNet, MobileNetV2, VGG (paddle.vision.models)
    pdx.vision.datasets     Digits, DatasetFolder, ImageFolder (paddle.vision.datasets)
    pdx.vision.transforms   numpy transforms run in data-loader workers
"""

from pdx.vision import datasets, models, transforms

__all__: list[str] = ["datasets", "models", "transforms"]
