"""DataParallel: Paddle's dygraph data parallel as a batch split over every device of the job.

Paddle runs one process per device, each computing gradients on its own
batch and all-reducing them. pdx wraps the layer once: its parameters are
replicated on a one-axis "dp" mesh over all devices (of all processes), and
`forward` puts the batch's first dimension on that axis. In a multi-process
job each process passes its own batch and the global batch is their
concatenation (`jax.make_array_from_process_local_data`). Under `pdx.jit`
with `pdx.value_and_grad` the gradient of the mean loss over the global
batch — what Paddle's all-reduce of per-rank means gives for equal
batches — is what XLA computes, with the all-reduce it inserts.
"""

from __future__ import annotations

import jax
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

from pdx.nn import Layer
from pdx.parallel import HybridConfig, shard

__all__ = ["DataParallel"]


class DataParallel(Layer):
    """Run `layers` data-parallel over every device (Paddle's `paddle.DataParallel`).

    Args:
      layers: the Layer to wrap.
      strategy, comm_buffer_size, last_comm_buffer_size, find_unused_parameters,
        group: accepted for ported code (XLA schedules the gradient all-reduce).

    `state_dict()` / `set_state_dict()` are the wrapped layer's (same names as
    Paddle); the wrapped layer is `model._layers`.

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> model = pdx.DataParallel(pdx.nn.Linear(4, 2))
      >>> model(jnp.ones((8, 4))).shape
      (8, 2)
    """

    def __init__(self, layers, strategy=None, comm_buffer_size: int = 25, last_comm_buffer_size: int = 1,
                 find_unused_parameters: bool = False, group=None):
        super().__init__()
        if not isinstance(layers, Layer):
            raise TypeError(f"DataParallel: layers must be a pdx.nn.Layer; got {type(layers).__name__}")
        config = HybridConfig(dp_degree=-1)
        self._mesh = config.mesh()
        shard(layers, config, mesh=self._mesh)
        self._layers = layers

    def _split(self, x):
        if not (hasattr(x, "shape") and hasattr(x, "dtype")) or len(x.shape) == 0:
            return x
        n = self._mesh.devices.size
        sharding = NamedSharding(self._mesh, PartitionSpec("dp"))
        if isinstance(x, jax.core.Tracer):
            return jax.lax.with_sharding_constraint(x, sharding) if x.shape[0] % n == 0 else x
        if jax.process_count() > 1 and not (isinstance(x, jax.Array) and not x.is_fully_addressable):
            return jax.make_array_from_process_local_data(sharding, np.asarray(x))
        if x.shape[0] % n:
            raise ValueError(f"DataParallel: the batch ({x.shape[0]} rows) must be divisible by the {n} devices it "
                             "is split over; pad or drop the last batch (DataLoader(drop_last=True))")
        return jax.device_put(x, sharding)

    def forward(self, *inputs, **kwargs):
        return self._layers(*(self._split(x) for x in inputs), **kwargs)

    def state_dict(self, *args, **kwargs):
        return self._layers.state_dict(*args, **kwargs)

    def set_state_dict(self, *args, **kwargs):
        return self._layers.set_state_dict(*args, **kwargs)

    def scale_loss(self, loss):
        """Paddle 2.x API: the loss unchanged (the mean over the global batch needs no scaling)."""
        return loss

    def no_sync(self):
        """Paddle's context for gradient accumulation; pdx accumulates by summing returned gradients."""
        import contextlib

        return contextlib.nullcontext()
