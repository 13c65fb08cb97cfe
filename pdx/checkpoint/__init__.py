"""Checkpoints that never lose data, and safe weight import/export.

`CheckpointManager` saves and restores a training-state pytree (sharded,
asynchronous, verified by a sha256 manifest, resharded on restore);
`save` / `load` are Paddle's `paddle.save` / `paddle.load` on safetensors;
`load_pdparams` reads Paddle `.pdparams` without running pickle code;
`save_safetensors` / `load_safetensors` move weights to and from other
frameworks. The `pdx ckpt` command inspects, verifies and converts checkpoints.
"""

from pdx.checkpoint._errors import (
    CheckpointCorruptError,
    CheckpointError,
    CheckpointIncompleteError,
    CheckpointNotFoundError,
    CheckpointSaveError,
    CheckpointTopologyError,
)
from pdx.checkpoint._io import load, load_safetensors, save, save_safetensors
from pdx.checkpoint._pdparams import PickleRefusedError, load_pdparams

# CheckpointManager needs orbax (half a second to import): loaded on first use,
# so `import pdx` (and every DataLoader worker) does not pay for it.
_LAZY = {"Checkpoint": "pdx.checkpoint._manager", "CheckpointManager": "pdx.checkpoint._manager"}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'pdx.checkpoint' has no attribute {name!r}")

__all__ = [
    "Checkpoint",
    "CheckpointCorruptError",
    "CheckpointError",
    "CheckpointIncompleteError",
    "CheckpointManager",
    "CheckpointNotFoundError",
    "CheckpointSaveError",
    "CheckpointTopologyError",
    "PickleRefusedError",
    "load",
    "load_pdparams",
    "load_safetensors",
    "save",
    "save_safetensors",
]
