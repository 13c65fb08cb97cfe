"""Dropout layers (Paddle's Dropout, Dropout2D, Dropout3D, AlphaDropout, FeatureAlphaDropout).

Each layer owns its PRNG key as an `RngState` variable. In training mode every
call splits it (keeping one half, masking with the other), so the layer draws
a new mask per call both eagerly and inside a compiled step that threads the
layer's state (`pdx.jit`, `nnx.jit`). Eval mode and p == 0 never touch it.
"""

from __future__ import annotations

import jax
import numpy as np

import pdx.nn.functional as F
from pdx.nn._common import init_rng_state, layer_error, next_rng
from pdx.nn._layer import Layer, as_rngs

__all__ = ["AlphaDropout", "Dropout", "Dropout2D", "Dropout3D", "FeatureAlphaDropout"]

_MODES = ("upscale_in_train", "downscale_in_infer")


def _check_p(p, layer: str) -> float:
    if isinstance(p, (jax.Array, np.ndarray)) and not isinstance(p, jax.core.Tracer) and np.size(p) == 1:
        p = float(np.asarray(p).reshape(()))  # Paddle's Dropout(p=paddle.to_tensor(0.5))
    if isinstance(p, bool) or not isinstance(p, (int, float, np.floating, np.integer)):
        raise TypeError(f"pdx.nn.{layer}: p must be a float in [0, 1]; got p={p!r} ({type(p).__name__})")
    if not 0 <= p <= 1:
        raise layer_error(layer, f"p must be a float in [0, 1]; got p={p!r}")
    return float(p)


class _RandomLayer(Layer):
    """Base of the dropout layers: holds `p` and the layer's RngState."""

    def __init__(self, p, rngs, layer: str):
        super().__init__()
        self.p = _check_p(p, layer)
        self.rng = init_rng_state(as_rngs(rngs), op=layer)

    def _key(self):
        return next_rng(self.rng) if self.training and self.p > 0 else None


class Dropout(_RandomLayer):
    """Randomly zero elements with probability `p` (Paddle's `nn.Dropout`).

    Args:
      p: drop probability in [0, 1].
      axis: None, or the axes along which one mask value is drawn (broadcast over the rest).
      mode: 'upscale_in_train' (scale kept values by 1/(1-p) in training, identity
        in eval) or 'downscale_in_infer' (no scaling in training, times (1-p) in eval).
      name: ignored.
      inplace: keyword-only, ignored (JAX arrays are immutable).
      rngs: seed of the layer's key: None (the global generator, `pdx.seed`), an
        int, a jax key or `flax.nnx.Rngs` (its 'dropout' stream).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> d = pdx.nn.Dropout(0.5)
      >>> d.eval()(jnp.ones(3)).tolist()
      [1.0, 1.0, 1.0]
    """

    # Paddle 3.0's positional order (3.3 inserted `inplace` second; it is keyword-only here).
    def __init__(self, p=0.5, axis=None, mode="upscale_in_train", name=None, *, inplace=False, rngs=None):
        super().__init__(p, rngs, "Dropout")
        if mode not in _MODES:
            raise layer_error("Dropout", f"mode={mode!r} is not supported; use one of {list(_MODES)}")
        self.inplace = inplace
        self.axis = tuple(axis) if isinstance(axis, list) else axis
        self.mode = mode
        self.name = name

    def forward(self, input):  # noqa: A002  (Paddle's argument name)
        axis = list(self.axis) if isinstance(self.axis, tuple) else self.axis
        return F.dropout(input, p=self.p, axis=axis, training=self.training, mode=self.mode, key=self._key())

    def extra_repr(self) -> str:
        axis = list(self.axis) if isinstance(self.axis, tuple) else self.axis
        name = f", name={self.name}" if self.name else ""
        return f"p={self.p}, axis={axis}, mode={self.mode}{name}, inplace={self.inplace}"


class Dropout2D(_RandomLayer):
    """Zero whole channels of a 4-D input with probability `p` (Paddle's `nn.Dropout2D`).

    Args:
      p: drop probability in [0, 1].
      data_format: 'NCHW' or 'NHWC'.
      name: ignored.
      rngs: seed of the layer's key (see `Dropout`).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.Dropout2D(0.5)(jnp.ones((2, 3, 4, 4))).shape
      (2, 3, 4, 4)
    """

    def __init__(self, p=0.5, data_format="NCHW", name=None, *, rngs=None):
        super().__init__(p, rngs, type(self).__name__)
        self.data_format = data_format
        self.name = name

    def forward(self, input):  # noqa: A002
        return F.dropout2d(input, p=self.p, training=self.training, data_format=self.data_format, key=self._key())

    def extra_repr(self) -> str:
        name = f", name={self.name}" if self.name else ""
        return f"p={self.p}, data_format={self.data_format}{name}"


class Dropout3D(Dropout2D):
    """Zero whole channels of a 5-D input with probability `p` (Paddle's `nn.Dropout3D`).

    Args:
      p: drop probability in [0, 1].
      data_format: 'NCDHW' or 'NDHWC'.
      name: ignored.
      rngs: seed of the layer's key (see `Dropout`).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.Dropout3D(0.5)(jnp.ones((1, 2, 2, 2, 2))).shape
      (1, 2, 2, 2, 2)
    """

    def __init__(self, p=0.5, data_format="NCDHW", name=None, *, rngs=None):
        super().__init__(p, data_format, name, rngs=rngs)

    def forward(self, input):  # noqa: A002
        return F.dropout3d(input, p=self.p, training=self.training, data_format=self.data_format, key=self._key())


class AlphaDropout(_RandomLayer):
    """Dropout that keeps SELU's self-normalizing statistics (Paddle's `nn.AlphaDropout`).

    Args:
      p: drop probability in [0, 1].
      name: ignored.
      rngs: seed of the layer's key (see `Dropout`).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.AlphaDropout(0.2).eval()(jnp.ones(2)).tolist()
      [1.0, 1.0]
    """

    def __init__(self, p=0.5, name=None, *, rngs=None):
        super().__init__(p, rngs, "AlphaDropout")
        self.name = name

    def forward(self, input):  # noqa: A002
        return F.alpha_dropout(input, p=self.p, training=self.training, key=self._key())

    def extra_repr(self) -> str:
        name = f", name={self.name}" if self.name else ""
        return f"p={self.p}{name}"


class FeatureAlphaDropout(AlphaDropout):
    """AlphaDropout of whole channels: one mask value per [N, C] (Paddle's `nn.FeatureAlphaDropout`).

    Args:
      p: drop probability in [0, 1].
      name: ignored.
      rngs: seed of the layer's key (see `Dropout`).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.FeatureAlphaDropout(0.2).eval()(jnp.ones((1, 2, 3))).shape
      (1, 2, 3)
    """

    def forward(self, input):  # noqa: A002
        return F.feature_alpha_dropout(input, p=self.p, training=self.training, key=self._key())
