"""Linear, Embedding and the shape-only layers Identity and Flatten."""

from __future__ import annotations

import math

import jax.numpy as jnp

import pdx.nn.functional as F
from pdx.nn import axes
from pdx._args import is_int
from pdx.nn._common import float_dtype, layer_error, value_of
from pdx.nn._layer import Layer, as_rngs
from pdx._args import as_array, normalize_axis

__all__ = ["Embedding", "Flatten", "Identity", "Linear"]


def _positive(value, *, layer: str, name: str) -> int:
    if not is_int(value) or value <= 0:
        raise layer_error(layer, f"`{name}` must be a positive int; got {name}={value!r}")
    return int(value)


class Linear(Layer):
    """Fully connected layer `y = x @ weight + bias` (Paddle's `nn.Linear`).

    `weight` has Paddle's layout `[in_features, out_features]` (the transpose
    of PyTorch's) and is initialized XavierUniform; `bias` starts at zero.

    Args:
      in_features: size of the last input dim.
      out_features: size of the last output dim.
      weight_attr: None, a `ParamAttr` or an initializer for `weight`.
      bias_attr: as weight_attr for `bias`; False means no bias.
      name: ignored (shown in repr).
      dtype: keyword-only parameter dtype (default: the global default float).
      axis_names: keyword-only logical names of weight's two dims (default
        `(axes.EMBED, axes.MLP)`); the bias takes the second.
      rngs: keyword-only None (global generator, `pdx.seed`), an int seed, a key or nnx.Rngs.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> fc = pdx.nn.Linear(3, 4)
      >>> fc(jnp.ones((2, 3))).shape, fc.weight.shape
      ((2, 4), (3, 4))
    """

    def __init__(self, in_features, out_features, weight_attr=None, bias_attr=None, name=None, *,
                 dtype=None, axis_names=None, rngs=None):
        super().__init__(dtype=float_dtype(dtype))
        in_features = _positive(in_features, layer="Linear", name="in_features")
        out_features = _positive(out_features, layer="Linear", name="out_features")
        if weight_attr is False:
            raise layer_error("Linear", "weight_attr=False is not allowed: a Linear layer needs its weight")
        names = (axes.EMBED, axes.MLP) if axis_names is None else tuple(axis_names)
        if len(names) != 2:
            raise layer_error("Linear", f"axis_names must name the 2 dims of weight [in, out]; got {axis_names!r}")
        rngs = as_rngs(rngs)
        self.weight = self.create_parameter((in_features, out_features), attr=weight_attr,
                                            axis_names=names, rngs=rngs)
        self.bias = self.create_parameter((out_features,), attr=bias_attr, is_bias=True,
                                          axis_names=names[1:], rngs=rngs)
        self.name = name

    def forward(self, input):  # noqa: A002  (Paddle's argument name)
        return F.linear(input, value_of(self.weight), value_of(self.bias))

    def extra_repr(self) -> str:
        name = f", name={self.name}" if self.name else ""
        in_features, out_features = self.weight.shape
        return f"in_features={in_features}, out_features={out_features}, dtype={self._dtype}{name}"


class Embedding(Layer):
    """Lookup table of `num_embeddings` vectors of size `embedding_dim` (Paddle's `nn.Embedding`).

    `weight` is `[num_embeddings, embedding_dim]`, initialized XavierUniform;
    as in Paddle, the `padding_idx` row starts at zero and looks up as zeros.

    Args:
      num_embeddings: number of rows (vocabulary size).
      embedding_dim: size of each vector.
      padding_idx: None, or a row index in [-num_embeddings, num_embeddings)
        that looks up as zeros and gets no gradient.
      sparse: accepted for compatibility (gradients are always dense in JAX).
      weight_attr: None, a `ParamAttr` or an initializer.
      name: ignored (shown in repr).
      dtype: keyword-only parameter dtype.
      rngs: keyword-only seed / key / nnx.Rngs (else the global generator).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> emb = pdx.nn.Embedding(10, 4, padding_idx=0)
      >>> emb(jnp.array([[0, 3]])).shape, float(abs(emb.weight[...][0]).sum())
      ((1, 2, 4), 0.0)
    """

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, sparse=False, weight_attr=None,
                 name=None, *, dtype=None, rngs=None):
        super().__init__(dtype=float_dtype(dtype))
        num_embeddings = _positive(num_embeddings, layer="Embedding", name="num_embeddings")
        embedding_dim = _positive(embedding_dim, layer="Embedding", name="embedding_dim")
        if padding_idx is not None and (not is_int(padding_idx)
                                        or not -num_embeddings <= padding_idx < num_embeddings):
            raise layer_error("Embedding", f"padding_idx={padding_idx!r} must be an int in "
                                           f"[-{num_embeddings}, {num_embeddings}) or None")
        self._num_embeddings = num_embeddings
        self._embedding_dim = embedding_dim
        self._padding_idx = None if padding_idx is None else int(padding_idx)
        self._sparse = bool(sparse)
        self._name = name
        self.weight = self.create_parameter((num_embeddings, embedding_dim), attr=weight_attr,
                                            axis_names=(axes.VOCAB, axes.EMBED), rngs=as_rngs(rngs))
        if self._padding_idx is not None:
            self.weight.set_value(self.weight.get_value().at[self._row].set(0))

    @property
    def padding_idx(self):
        return self._padding_idx

    @property
    def _row(self):
        """padding_idx as a non-negative row index."""
        return self._padding_idx % self._num_embeddings

    def forward(self, x):
        padding = None if self._padding_idx is None else self._row
        return F.embedding(x, value_of(self.weight), padding_idx=padding)

    def extra_repr(self) -> str:
        out = f"{self._num_embeddings}, {self._embedding_dim}"
        if self._padding_idx is not None:
            out += f", padding_idx={self._padding_idx}"
        out += f", sparse={self._sparse}, scale_grad_by_freq=False"
        if self._name is not None:
            out += f", name={self._name}"
        return out


class Identity(Layer):
    """Return the input unchanged (Paddle's `nn.Identity`); arguments are ignored.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.Identity(54, unused="x")(jnp.ones(2)).tolist()
      [1.0, 1.0]
    """

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):  # noqa: A002
        return input


class Flatten(Layer):
    """Merge dims `start_axis..stop_axis` into one (Paddle's `nn.Flatten`).

    Args:
      start_axis: first dim to merge (default 1, keeping the batch dim).
      stop_axis: last dim to merge (default -1).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.Flatten()(jnp.ones((2, 3, 4))).shape
      (2, 12)
    """

    def __init__(self, start_axis=1, stop_axis=-1, *, rngs=None):
        super().__init__()
        for name, value in (("start_axis", start_axis), ("stop_axis", stop_axis)):
            if not is_int(value):
                raise layer_error("Flatten", f"`{name}` must be an int; got {name}={value!r}")
        self.start_axis = int(start_axis)
        self.stop_axis = int(stop_axis)

    def forward(self, input):  # noqa: A002
        x = as_array(input, name="input", op="nn.Flatten")
        if x.ndim == 0:
            return jnp.reshape(x, (1,))
        start = normalize_axis(self.start_axis, x.ndim, op="nn.Flatten", name="start_axis")
        stop = normalize_axis(self.stop_axis, x.ndim, op="nn.Flatten", name="stop_axis")
        if start > stop:
            raise layer_error("Flatten", f"start_axis={self.start_axis} comes after stop_axis={self.stop_axis} "
                                         f"for an input of shape {tuple(x.shape)}")
        merged = math.prod(x.shape[start:stop + 1])
        return jnp.reshape(x, x.shape[:start] + (merged,) + x.shape[stop + 1:])
