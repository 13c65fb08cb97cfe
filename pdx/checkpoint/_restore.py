"""The read side of a checkpoint step: orbax restore arguments from a target, shardings and dtype.

`restore_step` reads one step directory's `state/` with orbax (no checks of
its own: `CheckpointManager.restore` runs `_manifest.check_step` first and
`restore_hashing` beside it); the CLI uses it to read any step anywhere as
numpy arrays.
"""

from __future__ import annotations

import concurrent.futures
from pathlib import Path

import jax
import numpy as np
import orbax.checkpoint as ocp

from pdx.checkpoint import _manifest
from pdx.checkpoint._errors import CheckpointCorruptError, CheckpointTopologyError

__all__ = ["STATE", "checkpointer", "meta_leaves", "path_str", "restore_hashing", "restore_step", "saved_tree"]

STATE = "state"


def checkpointer() -> ocp.Checkpointer:
    """A synchronous orbax checkpointer for reading (and inspecting) `state/`."""
    return ocp.Checkpointer(ocp.PyTreeCheckpointHandler())


def saved_tree(ckptr, state_dir: Path):
    """The saved tree of array metadata (shape, dtype, sharding) of a `state/` directory."""
    # orbax finds no item metadata under a relative path: always hand it an absolute one
    metadata = ckptr.metadata(Path(state_dir).absolute())
    item = getattr(metadata, "item_metadata", None)
    if item is None:
        raise CheckpointCorruptError(f"{state_dir} has no readable orbax tree metadata (_METADATA)",
                                     path=Path(state_dir))
    return item.tree


def path_str(path) -> str:
    """A pytree key path as `params/fc.weight`."""
    return jax.tree_util.keystr(path, simple=True, separator="/")


def meta_leaves(tree) -> dict:
    """`path_str` name -> leaf of a saved (metadata) tree."""
    leaves = jax.tree_util.tree_flatten_with_path(tree, is_leaf=lambda x: hasattr(x, "shape") and hasattr(x, "dtype"))[0]
    return {path_str(p): leaf for p, leaf in leaves}


def _missing_devices(meta) -> list[int]:
    mesh = getattr(getattr(meta, "sharding", None), "device_mesh", None)
    if mesh is None:
        return []
    have = {d.id for d in jax.devices()}
    ids = [d.id for d in np.asarray(mesh.mesh, dtype=object).ravel()]
    return sorted(set(ids) - have)


def _saved_sharding(name: str, meta, step_dir: Path):
    missing = _missing_devices(meta)
    if missing:
        raise CheckpointTopologyError(
            f"{step_dir}: {name!r} was saved sharded over devices {missing} that this job does not "
            f"have ({jax.device_count()} devices now, {_manifest.read_meta(step_dir).get('device_count')} at save). "
            "Pass shardings= (one jax.sharding.Sharding or a pytree of them) or a target whose "
            "leaves carry shardings to restore onto this topology.")
    if meta.sharding is None:
        return jax.sharding.SingleDeviceSharding(jax.devices()[0])
    return meta.sharding.to_jax_sharding()


def _cast(dtype, saved_dtype):
    if dtype is not None and jax.dtypes.issubdtype(saved_dtype, np.floating):
        return np.dtype(dtype)
    return saved_dtype


def restore_step(step_dir, target=None, shardings=None, *, dtype=None, as_numpy: bool = False):
    """Restore the pytree of one committed step directory (no manifest check: see `verify`).

    Args:
      step_dir: e.g. `ckpts/100`.
      target: optional pytree of arrays / jax.ShapeDtypeStruct / np.ndarray giving the
        structure, dtypes and shardings wanted; a subtree of the saved tree restores only
        those leaves (params-only, partial restore).
      shardings: one Sharding for every leaf, or a pytree of Shardings matching `target`
        (or the saved tree); overrides the target's own shardings.
      dtype: cast every floating leaf to this dtype.
      as_numpy: return host numpy arrays (for tools that read any checkpoint anywhere).

    Returns:
      The restored pytree.
    """
    step_dir = Path(step_dir)
    ckptr = checkpointer()
    state_dir = step_dir / STATE
    saved = saved_tree(ckptr, state_dir)
    saved_leaves = meta_leaves(saved)
    tree = saved if target is None else target

    if isinstance(shardings, jax.sharding.Sharding) or shardings is None:
        shard_tree = jax.tree.map(lambda _: shardings, tree, is_leaf=lambda x: x is None)
    else:
        try:
            shard_tree = jax.tree.map(lambda s, _: s, shardings, tree,
                                      is_leaf=lambda x: isinstance(x, jax.sharding.Sharding) or x is None)
        except ValueError as e:
            raise ValueError(f"restore(shardings=...) must be one Sharding or a pytree matching the "
                             f"{'target' if target is not None else 'saved state'}: {e}") from None

    def leaf_args(path, leaf, sharding):
        name = path_str(path)
        if name not in saved_leaves:
            raise KeyError(f"restore(target=...): {name!r} is not in the checkpoint {step_dir}; "
                           f"saved leaves: {sorted(saved_leaves)[:20]}")
        meta = saved_leaves[name]
        want_dtype = getattr(leaf, "dtype", None) if target is not None else None
        want_dtype = _cast(dtype, want_dtype if want_dtype is not None else meta.dtype)
        is_key = jax.dtypes.issubdtype(getattr(leaf, "dtype", np.float32), jax.dtypes.prng_key)
        # a typed PRNG key is stored as its key data: (…, 2) uint32 for a () key
        if not is_key and tuple(getattr(leaf, "shape", meta.shape)) != tuple(meta.shape):
            raise ValueError(f"restore(target=...): {name!r} has shape {tuple(leaf.shape)} in the target "
                             f"but {tuple(meta.shape)} in {step_dir}")
        if as_numpy or isinstance(leaf, np.ndarray):
            return ocp.RestoreArgs(restore_type=np.ndarray, dtype=want_dtype)
        if sharding is None:
            sharding = getattr(leaf, "sharding", None) if target is not None else None
        if sharding is None:
            sharding = _saved_sharding(name, meta, step_dir)
        return ocp.ArrayRestoreArgs(sharding=sharding, dtype=want_dtype, global_shape=None if is_key else tuple(meta.shape))

    is_leaf = lambda x: hasattr(x, "shape") and hasattr(x, "dtype")  # noqa: E731
    flat, treedef = jax.tree_util.tree_flatten_with_path(tree, is_leaf=is_leaf)
    flat_shardings = treedef.flatten_up_to(shard_tree)
    args = [leaf_args(p, leaf, s) for (p, leaf), s in zip(flat, flat_shardings)]
    restore_args = jax.tree_util.tree_unflatten(treedef, args)
    partial = target is not None and len(flat) < len(saved_leaves)
    def abstract(path, leaf):  # Python scalars in the target take the saved shape and dtype
        meta = saved_leaves[path_str(path)]
        return jax.ShapeDtypeStruct(getattr(leaf, "shape", meta.shape), getattr(leaf, "dtype", meta.dtype))

    item = None if target is None else jax.tree_util.tree_unflatten(treedef, [abstract(p, leaf) for p, leaf in flat])
    return ckptr.restore(state_dir, args=ocp.args.PyTreeRestore(item=item, restore_args=restore_args,
                                                                partial_restore=partial))



def restore_hashing(step_dir: Path, manifest: dict, verify: bool, read):
    """`read()` (the orbax restore) with the sha256 check of `step_dir` beside it when `verify`.

    Hash and read side by side: the second reader of each file hits the page cache,
    and the hash threads (which release the GIL) use cores orbax leaves idle; hashing
    first and reading after measured about 1.4x slower on 2 cores. Nothing is returned
    unless every sha256 matched. When orbax fails, the files are hashed (verify or not)
    so that damaged bytes are reported as corruption.

    Example:
      >>> manifest, _ = _manifest.check_step(Path("ckpts/100"))   # doctest: +SKIP
      >>> state = restore_hashing(Path("ckpts/100"), manifest, True, lambda: restore_step("ckpts/100"))  # doctest: +SKIP
    """
    if not verify:
        try:
            return read()
        except Exception:
            _manifest.hash_step(step_dir, manifest)
            raise
    _manifest.prefetch(step_dir, manifest)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        check = pool.submit(_manifest.hash_step, step_dir, manifest)
        try:
            state = read()
        except Exception:
            check.result()
            raise
        check.result()
    return state
