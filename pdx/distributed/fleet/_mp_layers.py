"""Tensor-parallel layers (Megatron's split) as whole layers whose weights carry mesh-axis names.

Paddle builds each rank's slice of the weight (`[in, out / mp]`) and calls
the collectives itself. pdx keeps the whole weight as one global array
(`layer.weight.shape` is the full shape) whose "mlp" / "vocab" logical axis
maps to the "mp" mesh axis: `fleet.distributed_model` places it split, and
the compiler inserts the all-reduce / all-gather Paddle's layers call by hand.
`gather_output` and `input_is_parallel` become sharding constraints on the
activations.
"""

from __future__ import annotations

import contextlib

import jax
import jax.numpy as jnp

from pdx.nn import Embedding, Layer, Linear, axes
from pdx.parallel import constrain

__all__ = ["ColumnParallelLinear", "ParallelCrossEntropy", "RNGStatesTracker", "RowParallelLinear",
           "VocabParallelEmbedding", "get_rng_state_tracker", "model_parallel_random_seed"]


def _activation_names(ndim: int, last):
    """(batch, seq, ..., last): the leading dims stay where the batch/sequence rules put them."""
    if ndim == 1:
        return (last,)
    if ndim == 2:
        return (axes.BATCH, last)
    return (axes.BATCH, axes.SEQ) + (None,) * (ndim - 3) + (last,)


class ColumnParallelLinear(Linear):
    """`y = x @ W + b` with W `[in, out]` split over "mp" by columns (Paddle's fleet layer).

    Args:
      in_features, out_features: the full sizes.
      weight_attr: ParamAttr / initializer of the weight.
      has_bias: add a bias (None: True, as Paddle).
      gather_output: True: y is whole on every mp device; False: y stays
        split over "mp" on its last dim (feed it to a RowParallelLinear with
        `input_is_parallel=True`).
      fuse_matmul_bias, mp_group, name: accepted (XLA fuses the bias; the
        group is the fleet mesh's "mp" axis).

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.distributed.fleet import meta_parallel as mpu
      >>> mpu.ColumnParallelLinear(4, 8, gather_output=False)(jnp.ones((2, 4))).shape
      (2, 8)
    """

    def __init__(self, in_features, out_features, weight_attr=None, has_bias=None, gather_output: bool = True,
                 fuse_matmul_bias: bool = False, mp_group=None, name=None, *, dtype=None, rngs=None):
        bias = None if has_bias in (None, True) else False
        super().__init__(in_features, out_features, weight_attr=weight_attr, bias_attr=bias, name=name,
                         dtype=dtype, axis_names=(axes.EMBED, axes.MLP), rngs=rngs)
        self.gather_output = bool(gather_output)

    def forward(self, x):
        y = super().forward(x)
        return constrain(y, _activation_names(y.ndim, None if self.gather_output else axes.MLP))


class RowParallelLinear(Linear):
    """`y = x @ W + b` with W `[in, out]` split over "mp" by rows; y is whole (the all-reduce is implied).

    Args:
      input_is_parallel: x arrives split over "mp" on its last dim (from a
        ColumnParallelLinear with gather_output=False); False: whole x, split here.
      the others: as ColumnParallelLinear (has_bias defaults to True).

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.distributed.fleet import meta_parallel as mpu
      >>> mpu.RowParallelLinear(8, 4, input_is_parallel=True)(jnp.ones((2, 8))).shape
      (2, 4)
    """

    def __init__(self, in_features, out_features, weight_attr=None, has_bias: bool = True,
                 input_is_parallel: bool = False, fuse_matmul_bias: bool = False, mp_group=None, name=None, *,
                 dtype=None, rngs=None):
        super().__init__(in_features, out_features, weight_attr=weight_attr, bias_attr=None if has_bias else False,
                         name=name, dtype=dtype, axis_names=(axes.MLP, axes.EMBED), rngs=rngs)
        self.input_is_parallel = bool(input_is_parallel)

    def forward(self, x):
        y = super().forward(constrain(x, _activation_names(x.ndim, axes.MLP)))
        return constrain(y, _activation_names(y.ndim, None))


class VocabParallelEmbedding(Embedding):
    """Embedding whose `[num_embeddings, embedding_dim]` table is split over "mp" by rows (vocabulary).

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.distributed.fleet import meta_parallel as mpu
      >>> mpu.VocabParallelEmbedding(16, 4)(jnp.array([[1, 2]])).shape
      (1, 2, 4)
    """

    def __init__(self, num_embeddings, embedding_dim, weight_attr=None, mp_group=None, name=None, *, dtype=None,
                 rngs=None):
        super().__init__(num_embeddings, embedding_dim, weight_attr=weight_attr, name=name, dtype=dtype, rngs=rngs)

    def forward(self, x):
        y = super().forward(x)
        return constrain(y, _activation_names(y.ndim, None))


class ParallelCrossEntropy(Layer):
    """Softmax cross entropy of logits split over "mp" on the class dim; per-token loss shaped `[..., 1]`.

    `label` is `[...]` or `[..., 1]`; tokens equal to `ignore_index` get loss 0.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.distributed.fleet import meta_parallel as mpu
      >>> mpu.ParallelCrossEntropy()(jnp.zeros((2, 3, 8)), jnp.zeros((2, 3), jnp.int32)).shape
      (2, 3, 1)
    """

    def __init__(self, mp_group=None, name=None, ignore_index: int = -100):
        super().__init__()
        self.ignore_index = int(ignore_index)

    def forward(self, input, label):  # noqa: A002  (Paddle's argument name)
        input = jnp.asarray(input)
        label = jnp.asarray(label)
        if label.ndim == input.ndim:
            if label.shape[-1] != 1:
                raise ValueError(f"ParallelCrossEntropy: label of shape {tuple(label.shape)} must end in 1 when it "
                                 f"has the logits' rank {input.ndim}")
            label = label[..., 0]
        if label.shape != input.shape[:-1]:
            raise ValueError(f"ParallelCrossEntropy: label shape {tuple(label.shape)} does not match the logits' "
                             f"leading dims {tuple(input.shape[:-1])}")
        logits = constrain(input, _activation_names(input.ndim, axes.VOCAB)).astype(jnp.float32)
        logp = jax.nn.log_softmax(logits, axis=-1)
        valid = label != self.ignore_index
        picked = jnp.take_along_axis(logp, jnp.where(valid, label, 0)[..., None].astype(jnp.int32), axis=-1)
        return jnp.where(valid[..., None], -picked, 0.0).astype(input.dtype)


class RNGStatesTracker:
    """Paddle's named RNG states for tensor-parallel dropout; a no-op in pdx.

    pdx's dropout draws from keys the layers carry, and one global array
    needs no per-rank streams: the same mask is used however the tensor is
    split, so the `rng_state(name)` context only runs its body.
    """

    def __init__(self):
        self.states_ = {}

    def add(self, name: str, seed: int) -> None:
        if name in self.states_:
            raise ValueError(f"RNGStatesTracker.add: state {name!r} already exists")
        self.states_[name] = int(seed)

    def reset(self) -> None:
        self.states_ = {}

    def get_states_tracker(self) -> dict:
        return dict(self.states_)

    def set_states_tracker(self, states: dict) -> None:
        self.states_ = dict(states)

    @contextlib.contextmanager
    def rng_state(self, name: str = "model_parallel_rng"):
        yield


_TRACKER = RNGStatesTracker()


def get_rng_state_tracker() -> RNGStatesTracker:
    """The process's RNGStatesTracker."""
    return _TRACKER


def model_parallel_random_seed(seed: int | None = None) -> None:
    """Seed pdx's global generator (`pdx.seed`); tensor-parallel ranks need no separate streams."""
    import pdx

    pdx.seed(2048 if seed is None else int(seed))
