"""CRNN text recognizer: conv features -> height collapsed -> BiLSTM -> per-column class scores (CTC)."""

from __future__ import annotations

import jax.numpy as jnp

import pdx.nn.functional as F
from pdx import nn
from pdx._random import as_rngs
from pdx.models.ocr._data import DEFAULT_ALPHABET

# (stride, pool) of each conv stage as (height, width): height / 16, width / 4 (a time step per 4 columns).
# The first stage strides instead of pooling: nothing runs at full resolution but one conv.
_STAGES = (((2, 2), None), ((1, 1), (2, 2)), ((1, 1), (2, 1)), ((1, 1), (2, 1)))


def standardize(images, *, eps: float = 1e-3):
    """Each image to zero mean, unit variance, ink positive.

    Text covers a minority of the pixels, so the pixel distribution is skewed towards the ink;
    multiplying by the sign of the third moment makes dark-on-light and light-on-dark text
    look the same to the network.

    Args:
      images: (N, C, H, W).
      eps: added to the standard deviation (a blank image stays finite).

    Returns:
      The standardized images, same shape.

    Example:
      >>> import jax.numpy as jnp
      >>> float(standardize(jnp.array([[[[0.0, 0.0, 0.0, 1.0]]]])).max()) > 1
      True
    """
    mean = jnp.mean(images, axis=(1, 2, 3), keepdims=True)
    x = images - mean
    std = jnp.sqrt(jnp.mean(x * x, axis=(1, 2, 3), keepdims=True))
    x = x / (std + eps)
    skew = jnp.mean(x * x * x, axis=(1, 2, 3), keepdims=True)
    return x * jnp.where(skew < 0, -1.0, 1.0)


class CRNN(nn.Layer):
    """A convolutional recurrent network for text lines, trained with CTC.

    The image is standardized (`standardize`), then four conv stages (3x3 conv, BatchNorm, ReLU;
    the first with stride 2, the others followed by a max-pool) shrink it 16x in height and 4x in
    width; the rows left are averaged away, a bidirectional LSTM reads the columns left to
    right and back, and a Linear gives each column scores over blank + the alphabet.

    Args:
      num_classes: output classes including the blank (id 0): len(alphabet) + 1.
      in_channels: image channels.
      channels: output channels of the four conv stages.
      hidden_size: LSTM units per direction.
      rngs: keyword-only seed / key / `flax.nnx.Rngs` for the initial weights.

    Returns:
      A Layer mapping images (N, in_channels, H, W) (H a multiple of 16, W of 4) to logits
      (N, W // 4, num_classes).

    Example:
      >>> import jax.numpy as jnp
      >>> CRNN(37, rngs=0)(jnp.zeros((2, 1, 32, 128))).shape
      (2, 32, 37)
    """

    def __init__(self, num_classes: int = len(DEFAULT_ALPHABET) + 1, *, in_channels: int = 1,
                 channels: tuple = (16, 32, 64, 64), hidden_size: int = 64, rngs=None):
        super().__init__()
        if num_classes < 2:
            raise ValueError(f"CRNN: num_classes counts the blank and at least one character (len(alphabet) + 1); "
                             f"got num_classes={num_classes}")
        if len(channels) != len(_STAGES):
            raise ValueError(f"CRNN: channels must give {len(_STAGES)} stage widths; got channels={channels!r}")
        rngs = as_rngs(rngs)
        layers, width = [], in_channels
        for out, (stride, pool) in zip(channels, _STAGES):
            layers += [nn.Conv2D(width, out, 3, stride=stride, padding=1, bias_attr=False, rngs=rngs),
                       nn.BatchNorm2D(out, rngs=rngs), nn.ReLU()]
            layers += [nn.MaxPool2D(pool, pool)] if pool else []
            width = out
        self.backbone = nn.Sequential(*layers)
        self.rnn = nn.LSTM(width, hidden_size, direction="bidirect", rngs=rngs)
        self.head = nn.Linear(2 * hidden_size, num_classes, rngs=rngs)
        self.num_classes = num_classes

    def forward(self, images):
        if images.ndim != 4 or images.shape[2] % 16 or images.shape[3] % 4:
            raise ValueError(f"CRNN: images must be (N, C, H, W) with H % 16 == 0 and W % 4 == 0; "
                             f"got shape {tuple(images.shape)}")
        features = self.backbone(standardize(images))                   # (N, C, H/16, W/4)
        columns = jnp.transpose(jnp.mean(features, axis=2), (0, 2, 1))  # (N, T, C)
        sequence, _ = self.rnn(columns)                                 # (N, T, 2 * hidden)
        return self.head(sequence)                                      # (N, T, classes)

    def loss(self, images, labels, label_lengths):
        """Mean CTC loss (per label character, Paddle's 'mean') of the images against padded labels."""
        logits = self(images)
        steps = jnp.full((logits.shape[0],), logits.shape[1], jnp.int32)
        return F.ctc_loss(jnp.transpose(logits, (1, 0, 2)), labels, steps, label_lengths, blank=0)
