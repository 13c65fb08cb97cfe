"""`paddle.distributed.fleet.utils`: recompute."""

__all__ = ["recompute"]


def recompute(function, *args, **kwargs):
    """Call `function(*args, **kwargs)` recomputing its activations in the backward pass (Paddle's form).

    Paddle's own options (`preserve_rng_state`, `use_reentrant`, `offload_indices`)
    are accepted; pdx layers carry their RNG keys, so dropout masks are the
    same when recomputed. `pdx.nn.recompute(layer)` is the wrapping form.

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> from pdx.distributed.fleet.utils import recompute
      >>> recompute(pdx.nn.Linear(4, 2), jnp.ones((3, 4))).shape
      (3, 2)
    """
    from pdx.nn import recompute as wrap

    for option in ("preserve_rng_state", "use_reentrant", "offload_indices"):
        kwargs.pop(option, None)
    return wrap(function)(*args, **kwargs)
