"""`Model.save` / `Model.load` files: safetensors + a JSON manifest, never pickle.

`save(path)` writes
  {path}.pdparams.safetensors   parameters and buffers by state_dict name
  {path}.pdopt.safetensors      (training=True) optimizer state by '/'-joined
                                optax path, plus step, lr, loss scale, rng
  {path}.json                   format, pdx version, sha256 of each file
Loading checks the sha256 sums, names and shapes before changing anything.
"""

from __future__ import annotations

import hashlib
import json
import os

import jax
import numpy as np

__all__ = ["save_state", "load_state", "FORMAT"]

FORMAT = "pdx-model/1"
_SCALARS = ("step", "lr", "nonfinite_steps", "rng")


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def _opt_flat(state) -> dict:
    leaves = jax.tree_util.tree_flatten_with_path(state.opt_state)[0]
    out = {"opt/" + jax.tree_util.keystr(p, simple=True, separator="/"): v for p, v in leaves}
    out.update({f"train/{k}": getattr(state, k) for k in _SCALARS})
    out.update({f"train/loss_scale/{k}": v for k, v in state.loss_scale._asdict().items()})
    return out


def save_state(state, path: str, *, training: bool = True) -> list[str]:
    """Write `state` (a TrainState) under `path`; returns the files written."""
    from safetensors.flax import save_file

    import pdx

    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    files = {"params": f"{path}.pdparams.safetensors"}
    save_file({k: jax.numpy.asarray(v) for k, v in state.state_dict().items()}, files["params"])
    if training:
        files["optimizer"] = f"{path}.pdopt.safetensors"
        save_file({k: jax.numpy.asarray(v) for k, v in _opt_flat(state).items()}, files["optimizer"])
    manifest = {"format": FORMAT, "pdx_version": pdx.__version__,
                "files": {role: {"name": os.path.basename(f), "sha256": _sha256(f)} for role, f in files.items()}}
    with open(f"{path}.json", "w") as f:
        json.dump(manifest, f, indent=1)
    return list(files.values()) + [f"{path}.json"]


def _read(path: str, role: str, manifest: dict | None):
    from safetensors.flax import load_file

    if manifest is not None:
        entry = manifest["files"].get(role)
        if entry is not None and _sha256(path) != entry["sha256"]:
            raise ValueError(f"Model.load: {path} does not match the sha256 recorded in its .json manifest "
                             "(the file is corrupt or was replaced)")
    return load_file(path)


def load_state(state, path: str, *, skip_mismatch: bool = False, reset_optimizer: bool = False):
    """A copy of `state` with values read from the files `save_state` wrote at `path`."""
    params_file = f"{path}.pdparams.safetensors"
    if not os.path.exists(params_file):
        raise FileNotFoundError(f"Model.load: {params_file} does not exist; pass the path given to Model.save "
                                "(without the .pdparams.safetensors suffix)")
    manifest = None
    if os.path.exists(f"{path}.json"):
        with open(f"{path}.json") as f:
            manifest = json.load(f)
        if manifest.get("format") != FORMAT:
            raise ValueError(f"Model.load: {path}.json has format {manifest.get('format')!r}; expected {FORMAT!r}")
    loaded = _read(params_file, "params", manifest)
    params, buffers = dict(state.params), dict(state.buffers)
    problems = []
    for name in state.spec.names:
        own = params if name in params else buffers
        if name not in loaded:
            problems.append(f"{name!r} is missing from the file")
            continue
        value = loaded[name]
        if tuple(value.shape) != tuple(own[name].shape):
            problems.append(f"{name!r} has shape {tuple(value.shape)} in the file but {tuple(own[name].shape)} in the model")
            continue
        own[name] = value.astype(own[name].dtype)
    if problems and not skip_mismatch:
        raise ValueError("Model.load: " + "; ".join(problems) + ". Nothing was loaded; pass skip_mismatch=True to "
                         "load the matching entries only")
    new = state.replace(params=params, buffers=buffers)
    opt_file = f"{path}.pdopt.safetensors"
    if reset_optimizer or not os.path.exists(opt_file) or state.spec.tx is None:
        return new, problems
    flat = _read(opt_file, "optimizer", manifest)
    template = _opt_flat(new)
    missing = [k for k in template if k not in flat]
    if missing:
        raise ValueError(f"Model.load: {opt_file} lacks {missing[:5]}{'...' if len(missing) > 5 else ''}; it was "
                         "saved with a different optimizer. Pass reset_optimizer=True to start the optimizer fresh")
    paths = jax.tree_util.tree_flatten_with_path(new.opt_state)
    leaves = []
    for p, v in paths[0]:
        key = "opt/" + jax.tree_util.keystr(p, simple=True, separator="/")
        got = flat[key]
        if tuple(got.shape) != tuple(np.shape(v)):
            raise ValueError(f"Model.load: optimizer entry {key!r} has shape {tuple(got.shape)} in the file but "
                             f"{tuple(np.shape(v))} here; pass reset_optimizer=True to start the optimizer fresh")
        leaves.append(got.astype(v.dtype))
    opt_state = jax.tree_util.tree_unflatten(paths[1], leaves)
    scale = type(new.loss_scale)(**{k: flat[f"train/loss_scale/{k}"] for k in new.loss_scale._fields})
    new = new.replace(opt_state=opt_state, loss_scale=scale,
                      **{k: flat[f"train/{k}"].astype(getattr(new, k).dtype) for k in _SCALARS})
    return new, problems
