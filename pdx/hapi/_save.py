"""`Model.save` / `Model.load` files: safetensors + a JSON checksum table, never pickle.

`save(path)` writes
  {path}.pdparams.safetensors   parameters and buffers by state_dict name
  {path}.pdopt.safetensors      (training=True) optimizer state by '/'-joined
                                optax path, plus step, lr, loss scale, rng
  {path}.json                   format, pdx version, size and sha256 of each file

`load(path)` requires `{path}.json` and its table entry for every file it
reads (a missing table is an error, not a skipped check). Files are read by
pdx's one loader rule (`pdx._safefile`): regular files only, symlinks only
inside the directory, the size checked against the table before reading, the
JSON capped in size and depth. The sha256 sums, names and shapes are checked
before anything changes; every failure is a `ModelFileError`. A checksum
proves a file is the one Model.save wrote, not who wrote it: it is not a
signature.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from pdx._safefile import load_json, read_file

__all__ = ["FORMAT", "ModelFileError", "load_state", "save_state"]

FORMAT = "pdx-model/1"
_SCALARS = ("step", "lr", "nonfinite_steps", "rng")
_MAX_TABLE_BYTES = 1 << 20
_MAX_TABLE_DEPTH = 8
_MAX_UNSIZED_BYTES = 1 << 40  # tables written before sizes were recorded: fstat size, checked by sha256
_UNVERIFIED = (
    "Model.load reads only what Model.save wrote, checked against the sha256 table in {table}. To load "
    "weights pdx did not write (a Paddle .pdparams, a safetensors file of your own) without that check, "
    "read them explicitly: `net.set_state_dict(pdx.load(file))`, then `pdx.Model(net).prepare(...)`"
)


class ModelFileError(ValueError):
    """A `Model.load` file is missing, unverifiable, corrupted or does not fit the model.

    Example:
        >>> import pdx
        >>> try:
        ...     pdx.Model(pdx.nn.Linear(2, 2)).load("/nonexistent/m")
        ... except pdx.hapi.ModelFileError as e:
        ...     print("refused")
        refused
    """


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _opt_flat(state) -> dict:
    leaves = jax.tree_util.tree_flatten_with_path(state.opt_state)[0]
    out = {"opt/" + jax.tree_util.keystr(p, simple=True, separator="/"): v for p, v in leaves}
    out.update({f"train/{k}": getattr(state, k) for k in _SCALARS})
    out.update({f"train/loss_scale/{k}": v for k, v in state.loss_scale._asdict().items()})
    return out


def _write(file: str, data: bytes) -> None:
    tmp = f"{file}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, file)


def save_state(state, path: str, *, training: bool = True) -> list[str]:
    """Write `state` (a TrainState) under `path`; returns the files written."""
    from safetensors.flax import save

    import pdx

    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    blobs = {"params": (f"{path}.pdparams.safetensors", state.state_dict())}
    if training:
        blobs["optimizer"] = (f"{path}.pdopt.safetensors", _opt_flat(state))
    table = {}
    for role, (file, tree) in blobs.items():
        data = save({k: jax.numpy.asarray(v) for k, v in tree.items()})
        _write(file, data)
        table[role] = {"name": os.path.basename(file), "size": len(data), "sha256": _sha256(data)}
    manifest = {"format": FORMAT, "pdx_version": pdx.__version__, "files": table}
    _write(f"{path}.json", json.dumps(manifest, indent=1).encode("utf-8"))
    return [file for file, _ in blobs.values()] + [f"{path}.json"]


def _read_table(path: str, params_file: str) -> dict:
    """The checksum table `{role: {name, size, sha256}}` from `{path}.json`; required."""
    table_file = f"{path}.json"
    if not os.path.lexists(table_file):
        raise ModelFileError(f"Model.load: {table_file} is missing, so {params_file} cannot be verified. "
                             + _UNVERIFIED.format(table=table_file))
    root = os.path.dirname(os.path.abspath(path))
    raw = read_file(table_file, max_bytes=_MAX_TABLE_BYTES, what="Model.load: checksum table", root=root,
                    error=ModelFileError)
    manifest = load_json(raw, what=f"Model.load: {table_file}", max_depth=_MAX_TABLE_DEPTH, error=ModelFileError)
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        found = manifest.get("format") if isinstance(manifest, dict) else type(manifest).__name__
        raise ModelFileError(f"Model.load: {table_file} has format {found!r}; expected {FORMAT!r}. "
                             + _UNVERIFIED.format(table=table_file))
    table = manifest.get("files")
    if not isinstance(table, dict) or not isinstance(table.get("params"), dict):
        raise ModelFileError(f"Model.load: {table_file} has no checksum entry for the parameters (its 'files' "
                             f"table is {table!r}). " + _UNVERIFIED.format(table=table_file))
    for role, entry in table.items():
        size = entry.get("size") if isinstance(entry, dict) else None
        if not (isinstance(entry, dict) and isinstance(entry.get("sha256"), str)
                and (size is None or isinstance(size, int) and not isinstance(size, bool) and size >= 0)):
            raise ModelFileError(f"Model.load: {table_file}: the entry of {role!r} is {entry!r}, not "
                                 "{'name': str, 'size': int, 'sha256': str}; save the model again")
    return table


def _read(file: str, role: str, table: dict):
    """The verified contents of one file listed in the table, as {name: jax.Array}."""
    from safetensors import SafetensorError
    from safetensors.flax import load

    entry = table[role]
    size = entry.get("size")
    if not os.path.lexists(file):
        raise ModelFileError(f"Model.load: {file} is listed in the checksum table but missing; copy all files "
                             "that Model.save wrote (or pass reset_optimizer=True to skip the optimizer file)")
    data = read_file(file, max_bytes=_MAX_UNSIZED_BYTES if size is None else size, size=size, what="Model.load: file",
                     root=os.path.dirname(os.path.abspath(file)), error=ModelFileError)
    if _sha256(data) != entry["sha256"]:
        raise ModelFileError(f"Model.load: {file} does not match the sha256 recorded in its .json table "
                             "(the file is corrupt or was replaced)")
    try:
        return load(data)
    except SafetensorError as e:  # only reachable when the table was rewritten with the file
        raise ModelFileError(f"Model.load: {file} is not a safetensors file ({e})") from None


def _missing_params_message(path: str, params_file: str) -> str:
    return (f"Model.load: {params_file} does not exist; pass the path given to Model.save "
            "(without the .pdparams.safetensors suffix)")


def load_state(state, path: str, *, skip_mismatch: bool = False, reset_optimizer: bool = False):
    """A copy of `state` with values read from the files `save_state` wrote at `path`.

    Raises:
      ModelFileError: a file or its checksum table is missing, malformed or
        does not match, or the names/shapes do not fit `state`.
    """
    params_file = f"{path}.pdparams.safetensors"
    if not os.path.lexists(params_file):
        if os.path.isfile(f"{path}.pdparams"):
            return _load_paddle_params(state, f"{path}.pdparams", skip_mismatch)
        raise ModelFileError(_missing_params_message(path, params_file))
    table = _read_table(path, params_file)
    loaded = _read(params_file, "params", table)
    new, problems = _apply(state, loaded, skip_mismatch)
    # The optimizer file is read only when this save's table lists it: a save
    # with training=False leaves any older .pdopt file out of its table.
    if reset_optimizer or "optimizer" not in table or state.spec.tx is None:
        return new, problems
    return _load_optimizer(new, f"{path}.pdopt.safetensors", table), problems


def _load_paddle_params(state, file: str, skip_mismatch: bool):
    """Parameters from a Paddle `.pdparams` (`paddle.save(net.state_dict(), ...)` or Paddle's Model.save), read by
    pdx.load's pickle parser (no code runs); the optimizer starts fresh (Paddle's `.pdopt` is not read)."""
    from pdx.checkpoint import CheckpointCorruptError, load

    try:
        loaded = load(file)
    except CheckpointCorruptError as e:
        raise ModelFileError(f"Model.load: {file}: {e}") from None
    if not isinstance(loaded, dict):
        raise ModelFileError(f"Model.load: {file} holds a {type(loaded).__name__}, not a state dict")
    if os.path.exists(file[:-len(".pdparams")] + ".pdopt"):
        warnings.warn(f"Model.load: {file} is a Paddle file: its parameters are loaded, and the optimizer starts "
                      "fresh (Paddle's .pdopt optimizer state is not read)", stacklevel=3)
    return _apply(state, {k: jnp.asarray(v) for k, v in loaded.items()}, skip_mismatch)


def _apply(state, loaded: dict, skip_mismatch: bool):
    """`state` with its parameters and buffers taken from `loaded` (name -> array), checked by name and shape."""
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
        raise ModelFileError("Model.load: " + "; ".join(problems) + ". Nothing was loaded; pass skip_mismatch=True "
                             "to load the matching entries only")
    return state.replace(params=params, buffers=buffers), problems


def _load_optimizer(new, opt_file: str, table: dict):
    """`new` with its optimizer state read from `opt_file` (listed in `table`)."""
    flat = _read(opt_file, "optimizer", table)
    template = _opt_flat(new)
    missing = [k for k in template if k not in flat]
    if missing:
        raise ModelFileError(f"Model.load: {opt_file} lacks {missing[:5]}{'...' if len(missing) > 5 else ''}; it "
                             "was saved with a different optimizer. Pass reset_optimizer=True to start the "
                             "optimizer fresh")
    paths = jax.tree_util.tree_flatten_with_path(new.opt_state)
    leaves = []
    for p, v in paths[0]:
        key = "opt/" + jax.tree_util.keystr(p, simple=True, separator="/")
        got = flat[key]
        if tuple(got.shape) != tuple(np.shape(v)):
            raise ModelFileError(f"Model.load: optimizer entry {key!r} has shape {tuple(got.shape)} in the file but "
                                 f"{tuple(np.shape(v))} here; pass reset_optimizer=True to start the optimizer fresh")
        leaves.append(got.astype(v.dtype))
    opt_state = jax.tree_util.tree_unflatten(paths[1], leaves)
    scale = type(new.loss_scale)(**{k: flat[f"train/loss_scale/{k}"] for k in new.loss_scale._fields})
    new = new.replace(opt_state=opt_state, loss_scale=scale,
                      **{k: flat[f"train/{k}"].astype(getattr(new, k).dtype) for k in _SCALARS})
    return new
