"""LeNet (Paddle's `paddle.vision.models.LeNet`)."""

from __future__ import annotations

from pdx import nn
from pdx._random import as_rngs
from pdx.vision.models._common import check_data_format, flatten_features

__all__ = ["LeNet"]


class LeNet(nn.Layer):
    """LeNet for 1x28x28 images (Paddle's `paddle.vision.models.LeNet`).

    Same layers, state-dict names and shapes as Paddle's, so
    `net.set_state_dict(paddle_net.state_dict())` loads Paddle weights.

    Args:
      num_classes: size of the last Linear; <= 0 leaves out the classifier and
        returns the [N, 16, 5, 5] features. Default 10.
      data_format: keyword-only pdx extension: 'NCHW' (Paddle's) or 'NHWC'.
        The state dict is the same in both.
      rngs: keyword-only seed / key / `flax.nnx.Rngs` for the initial weights;
        default: the global generator (`pdx.seed`).

    Returns:
      A Layer mapping [N, 1, 28, 28] images to [N, num_classes] logits.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.vision import models
      >>> models.LeNet()(jnp.zeros((2, 1, 28, 28))).shape
      (2, 10)
    """

    def __init__(self, num_classes: int = 10, *, data_format: str = "NCHW", rngs=None):
        super().__init__()
        self.num_classes = num_classes
        self.data_format = check_data_format("LeNet", data_format)
        rngs = as_rngs(rngs)
        fmt = dict(data_format=data_format)
        self.features = nn.Sequential(
            nn.Conv2D(1, 6, 3, stride=1, padding=1, rngs=rngs, **fmt),
            nn.ReLU(),
            nn.MaxPool2D(2, 2, **fmt),
            nn.Conv2D(6, 16, 5, stride=1, padding=0, rngs=rngs, **fmt),
            nn.ReLU(),
            nn.MaxPool2D(2, 2, **fmt),
        )
        if num_classes > 0:
            # Paddle's LeNet has no activations between these Linears; kept as is.
            self.fc = nn.Sequential(
                nn.Linear(400, 120, rngs=rngs),
                nn.Linear(120, 84, rngs=rngs),
                nn.Linear(84, num_classes, rngs=rngs),
            )

    def forward(self, inputs):
        x = self.features(inputs)
        if self.num_classes > 0:
            x = self.fc(flatten_features(x, self.data_format))
        return x
