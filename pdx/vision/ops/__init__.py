"""pdx.vision.ops: detection and vision operators with Paddle's names
(`paddle.vision.ops`), written as JAX compositions.

    ConvNormActivation   Conv2D + norm + activation block used by the vision models
"""

from pdx.vision.ops._layers import ConvNormActivation

__all__ = ["ConvNormActivation"]
