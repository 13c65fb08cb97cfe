"""`dist.save_state_dict` / `dist.load_state_dict`: sharded checkpoints of a state dict, resharded on load.

Both go through `pdx.checkpoint.CheckpointManager` (orbax, one step directory
under `path`, a sha256 manifest): every process writes its own shards, and
loading places each value the way the array it replaces is placed now — any
mesh, any device count.
"""

from __future__ import annotations

import jax
from flax import nnx

__all__ = ["load_merged_state_dict", "load_state_dict", "save_state_dict"]


def _manager(path, fn: str):
    from pdx.checkpoint import CheckpointManager

    if not isinstance(path, (str, bytes)) and not hasattr(path, "__fspath__"):
        raise TypeError(f"dist.{fn}: path must be a directory path; got {type(path).__name__}")
    return CheckpointManager(path, async_save=False, handle_sigterm=False)


def _arrays(state_dict, fn: str) -> dict:
    if not hasattr(state_dict, "items"):
        raise TypeError(f"dist.{fn}: state_dict must be a mapping name -> tensor; got {type(state_dict).__name__}")
    out = {}
    for name, value in state_dict.items():
        value = value.get_value() if isinstance(value, nnx.Variable) else value
        if not isinstance(value, jax.Array):
            raise TypeError(f"dist.{fn}: state_dict[{name!r}] is a {type(value).__name__}, not a tensor")
        out[name] = value
    return out


def save_state_dict(state_dict, path, process_group=None, coordinator_rank: int = 0, unique_id=None,
                    async_save: bool = False) -> None:
    """Save `state_dict` (name -> tensor, sharded or not) under directory `path`.

    Example: `dist.save_state_dict(model.state_dict(), "ckpt/")`.
    """
    arrays = _arrays(state_dict, "save_state_dict")
    with _manager(path, "save_state_dict") as manager:
        step = 0 if unique_id is None else int(unique_id)
        manager.save(step, arrays, force=True)


def load_state_dict(state_dict, path, process_group=None, coordinator_rank: int = 0, unique_id=None,
                    offload: bool = False) -> None:
    """Fill `state_dict` in place from `path`, each value placed like the one it replaces.

    Example: `sd = model.state_dict(); dist.load_state_dict(sd, "ckpt/"); model.set_state_dict(sd)`.
    """
    arrays = _arrays(state_dict, "load_state_dict")
    target = {k: jax.ShapeDtypeStruct(v.shape, v.dtype, sharding=v.sharding) for k, v in arrays.items()}
    with _manager(path, "load_state_dict") as manager:
        restored = manager.restore(None if unique_id is None else int(unique_id), target=target).state
    for name, var in state_dict.items():
        if isinstance(var, nnx.Variable):
            var.set_value(restored[name])
        else:
            state_dict[name] = restored[name]


def load_merged_state_dict(path, prefix: str | None = None, unique_id=None, offload: bool = False,
                           aoa_config=None, safetensors: bool = False) -> dict:
    """The whole state dict saved under `path` as unsharded arrays (names starting with `prefix` only).

    Example: `full = dist.load_merged_state_dict("ckpt/")`.
    """
    with _manager(path, "load_merged_state_dict") as manager:
        state = manager.restore(None if unique_id is None else int(unique_id)).state
    return {k: v for k, v in state.items() if prefix is None or k.startswith(prefix)}
