"""CheckpointManager: sharded, asynchronous, verified checkpoints of any pytree.

Layout of a checkpoint directory:

    ckpts/
      100/                    committed step (listed, restorable)
        state/                the pytree, written by orbax (each process its own shards)
        pdx_meta.json         data-iterator state, user metadata, topology, versions
        MANIFEST.json         bytes + sha256 of every file above
        COMMITTED             sha256 of MANIFEST.json (written last)
      200.incomplete/         a save in flight or interrupted: never listed
      50.deleting/            a step being deleted (renamed away first, so readers never see it half gone)

A save writes everything into `<step>.incomplete/`, waits for orbax's write,
hashes every file into the manifest, writes the marker, and renames the
directory to `<step>` (the commit). Retention runs only after that rename,
so a failing save can never cost the previous checkpoint.
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import signal
import threading
import time
from pathlib import Path
from typing import Any, NamedTuple

import jax
import numpy as np
import orbax.checkpoint as ocp

from pdx._safefile import json_depth
from pdx.checkpoint import _manifest
from pdx.checkpoint._errors import (
    CheckpointIncompleteError,
    CheckpointNotFoundError,
    CheckpointSaveError,
)
from pdx.checkpoint._restore import STATE, path_str, restore_hashing, restore_step

__all__ = ["Checkpoint", "CheckpointManager", "committed_steps", "incomplete_dirs", "read_meta",
           "restore_step", "step_dir_of"]

META = _manifest.META
INCOMPLETE = ".incomplete"
DELETING = ".deleting"
# OCDBT splits a step's data into files of about this size (it writes one file otherwise):
# the sha256 of the manifest then runs one thread per file, beside orbax's own reads.
# 1 GiB step on 2 cores: save 3.9 -> 2.7 s, verified restore 0.42x -> 0.51x a raw read
# (benchmarks/HISTORY.md, "CPU speed, third pass", Overheads).
DATA_FILE_BYTES = 128 << 20

# Test-only: with PDX_CKPT_TEST_PAUSE_AT=copy|write|commit a save stops at that point,
# touches the file named by PDX_CKPT_TEST_SIGNAL and sleeps, so a test can SIGKILL it there.
_PAUSE_ENV = "PDX_CKPT_TEST_PAUSE_AT"
_SIGNAL_ENV = "PDX_CKPT_TEST_SIGNAL"


def _test_pause(point: str) -> None:
    if os.environ.get(_PAUSE_ENV) != point:
        return
    Path(os.environ[_SIGNAL_ENV]).touch()
    while True:
        time.sleep(60)


class Checkpoint(NamedTuple):
    """What `CheckpointManager.restore` returns.

    Attributes:
      step: the restored step.
      state: the pytree (structure of `target` when one was given, nested dicts otherwise).
      data_state: the JSON-able data-iterator state given to `save` (or None).
      metadata: the JSON-able user metadata given to `save` (or None).
    """

    step: int
    state: Any
    data_state: Any
    metadata: Any


# -- directory helpers (also used by the CLI) ---------------------------------------------------
def committed_steps(directory) -> list[int]:
    """Sorted steps under `directory` that carry a commit marker."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    return sorted(int(p.name) for p in directory.iterdir()
                  if p.name.isdigit() and p.is_dir() and _manifest.is_committed(p))


def incomplete_dirs(directory) -> list[Path]:
    """Step directories under `directory` whose save never committed."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    out = []
    for p in directory.iterdir():
        if p.is_dir() and (p.name.endswith((INCOMPLETE, DELETING))
                           or (p.name.isdigit() and not _manifest.is_committed(p))):
            out.append(p)
    return sorted(out, key=lambda p: p.name)


def step_dir_of(directory, step: int | None) -> Path:
    """The committed directory of `step` (latest when None), with typed errors."""
    directory = Path(directory)
    steps = committed_steps(directory)
    if step is None:
        if not steps:
            raise CheckpointNotFoundError(
                f"no committed checkpoint in {directory} (incomplete: "
                f"{[p.name for p in incomplete_dirs(directory)]}); save one first")
        step = steps[-1]
    if not isinstance(step, (int, np.integer)) or isinstance(step, bool) or step < 0:
        raise ValueError(f"step must be a non-negative int or None (latest); got step={step!r}")
    path = directory / str(int(step))
    if int(step) not in steps:
        if path.is_dir() or (directory / f"{int(step)}{INCOMPLETE}").is_dir():
            raise CheckpointIncompleteError(
                f"step {step} in {directory} was never committed (its save was interrupted or failed); "
                f"committed steps: {steps}")
        raise CheckpointNotFoundError(f"no step {step} in {directory}; committed steps: {steps}")
    return path


def read_meta(step_dir) -> dict:
    """The pdx_meta.json of a step directory (checked to record the directory's step)."""
    return _manifest.read_meta(Path(step_dir))


def _check_leaves(state) -> None:
    leaves = jax.tree_util.tree_flatten_with_path(state)[0]
    for path, leaf in leaves:
        if not isinstance(leaf, (jax.Array, np.ndarray, np.generic, int, float, bool)):
            raise TypeError(
                f"save(state=...): leaf {path_str(path)!r} is a {type(leaf).__name__}; state leaves must be "
                "arrays or Python/numpy scalars. Pass JSON-able side items as data_state= or metadata=.")


def _json_checked(value, name: str):
    try:
        text = json.dumps(value, allow_nan=True)
    except (TypeError, ValueError, RecursionError) as e:
        raise TypeError(
            f"save({name}=...) must be JSON-able (dicts, lists, str, int, float, bool, None); "
            f"got {type(value).__name__}: {e}. Put arrays in `state` instead.") from None
    depth, limit = json_depth(text), _manifest.MAX_META_DEPTH - 1
    if depth > limit:  # restore reads pdx_meta.json with this depth limit: never write what it refuses
        raise ValueError(f"save({name}=...) nests {depth} levels deep, over the limit of {limit}; flatten it")
    return value


# -- the manager -------------------------------------------------------------------------------------
class CheckpointManager:
    """Saves and restores a training-state pytree, asynchronously and verifiably.

    Each `save` snapshots the arrays (device -> host) and returns; the write, the
    sha256 manifest and the commit (an atomic rename) finish in the background.
    A step is listed only after its commit; a failed background save raises
    `CheckpointSaveError` at the next `save`, `wait_until_finished` or `close`
    and never becomes `latest_step()`. Old steps are deleted only after a newer
    one committed. On SIGTERM, `reached_preemption(step)` turns True and the
    next `save` is forced, so a loop can save, wait and exit 0.

    Args:
      directory: where step directories live (created if missing).
      max_to_keep: keep at most this many newest committed steps (None: all).
      keep_period: also keep every step divisible by this (never deleted).
      save_interval_steps: `save(step, ...)` writes only when `step % save_interval_steps == 0`
        (or `force=True`, or after SIGTERM).
      async_save: write in the background (True) or block until committed (False).
      handle_sigterm: install a SIGTERM handler that requests a final save (main thread only;
        a second SIGTERM terminates as usual, so a loop that never checks cannot hang on it).
      verify_on_restore: check every file's sha256 before restoring.

    Example:
      >>> mgr = CheckpointManager("/tmp/ckpts", max_to_keep=3)          # doctest: +SKIP
      >>> mgr.save(100, state, data_state=loader.state_dict())          # doctest: +SKIP
      >>> ckpt = mgr.restore(target=state)    # Checkpoint(step, state, data_state, metadata)  # doctest: +SKIP
      >>> mgr.close()                                                  # doctest: +SKIP
    """

    def __init__(self, directory, *, max_to_keep: int | None = None, keep_period: int | None = None,
                 save_interval_steps: int = 1, async_save: bool = True, handle_sigterm: bool = True,
                 verify_on_restore: bool = True):
        for name, value in (("max_to_keep", max_to_keep), ("keep_period", keep_period)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise ValueError(f"CheckpointManager({name}=...) must be a positive int or None; got {value!r}")
        if not isinstance(save_interval_steps, int) or isinstance(save_interval_steps, bool) or save_interval_steps < 1:
            raise ValueError(f"CheckpointManager(save_interval_steps=...) must be a positive int; got {save_interval_steps!r}")
        self.directory = Path(directory).absolute()
        self.max_to_keep = max_to_keep
        self.keep_period = keep_period
        self.save_interval_steps = save_interval_steps
        self.async_save = async_save
        self.verify_on_restore = verify_on_restore
        self._primary = jax.process_index() == 0
        if self._primary:
            self.directory.mkdir(parents=True, exist_ok=True)
        handler = ocp.PyTreeCheckpointHandler(use_compression=False)
        self._ckptr = ocp.AsyncCheckpointer(handler) if async_save else ocp.Checkpointer(handler)
        self._thread: threading.Thread | None = None
        self._error: tuple[int, BaseException] | None = None
        self._preempted = False
        self._previous_handler = None
        if handle_sigterm and jax.process_count() == 1 and threading.current_thread() is threading.main_thread():
            self._previous_handler = signal.signal(signal.SIGTERM, self._on_sigterm)
        self._closed = False
        self._barriers = 0

    # -- queries ---------------------------------------------------------------------------
    def all_steps(self) -> list[int]:
        """Committed steps, oldest first (incomplete saves are never listed)."""
        return committed_steps(self.directory)

    def latest_step(self) -> int | None:
        """The newest committed step, or None."""
        steps = self.all_steps()
        return steps[-1] if steps else None

    def should_save(self, step: int) -> bool:
        """Whether `save(step, ...)` would write (interval reached or preemption requested)."""
        return step % self.save_interval_steps == 0 or self.reached_preemption(step)

    def reached_preemption(self, step: int) -> bool:
        """True once SIGTERM arrived (on every process at the same `step` when multi-process)."""
        if jax.process_count() > 1:
            from jax.experimental import multihost_utils

            return bool(multihost_utils.reached_preemption_sync_point(step))
        return self._preempted

    def _on_sigterm(self, signum, frame) -> None:
        if self._preempted:  # a second SIGTERM: the loop is not checking; let it terminate
            signal.signal(signal.SIGTERM, self._previous_handler or signal.SIG_DFL)
            self._previous_handler = None
            os.kill(os.getpid(), signal.SIGTERM)
            return
        self._preempted = True

    # -- save ---------------------------------------------------------------------------------
    def save(self, step: int, state, *, data_state=None, metadata=None, force: bool = False) -> bool:
        """Save `state` (any pytree of arrays and scalars) as `step`.

        Args:
          step: a non-negative int, larger than any committed step is typical.
          state: the pytree (e.g. a TrainState); each process writes its own shards.
          data_state: JSON-able data-iterator state (e.g. `loader.state_dict()`).
          metadata: JSON-able user metadata.
          force: save even when `step` is not on the save interval.

        Returns:
          True if a save was started, False if skipped by `save_interval_steps`.

        Raises:
          CheckpointSaveError: an earlier asynchronous save failed (raised once; the
            next call saves normally). Nothing of this call was saved.
          ValueError: `step` is already committed.
        """
        self._check_open()
        self._finish_pending()
        if not isinstance(step, (int, np.integer)) or isinstance(step, bool) or step < 0:
            raise ValueError(f"save(step=...) must be a non-negative int; got {step!r}")
        step = int(step)
        if not (force or self.should_save(step)):
            return False
        _check_leaves(state)
        _json_checked(data_state, "data_state")
        _json_checked(metadata, "metadata")
        final = self.directory / str(step)
        if final.exists():
            raise ValueError(f"save: step {step} already exists at {final}; save a new step or delete it "
                             "(`pdx ckpt prune`)")
        tmp = self.directory / f"{step}{INCOMPLETE}"
        if self._primary:
            if tmp.exists():
                shutil.rmtree(tmp)
            tmp.mkdir(parents=True)
            meta = {
                "step": step,
                "time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "data_state": data_state,
                "metadata": metadata,
                "device_count": jax.device_count(),
                "process_count": jax.process_count(),
                "versions": _versions(),
            }
            (tmp / META).write_text(json.dumps(meta, indent=1))
        _test_pause("copy")
        self._ckptr.save(tmp / STATE, args=ocp.args.PyTreeSave(state, ocdbt_target_data_file_size=DATA_FILE_BYTES))
        if self.async_save:
            self._thread = threading.Thread(target=self._commit, args=(step, tmp, final), daemon=True,
                                            name=f"pdx-checkpoint-commit-{step}")
            self._thread.start()
        else:
            self._commit(step, tmp, final)
            self._finish_pending()
        return True

    def _commit(self, step: int, tmp: Path, final: Path) -> None:
        try:
            _test_pause("write")
            if self.async_save:
                self._ckptr.wait_until_finished()  # every process's shards are written
            if self._primary:
                try:
                    _manifest.write_manifest(tmp)
                    _test_pause("commit")
                    os.rename(tmp, final)
                    _manifest.fsync_dir(self.directory)
                    self._apply_retention()
                finally:
                    self._sync(f"commit-{step}")
            else:  # the other processes return from the save only once process 0 committed
                self._sync(f"commit-{step}")
                if not final.is_dir():
                    raise CheckpointSaveError(f"process 0 did not commit step {step} (see its error)", step=step)
        except BaseException as e:  # noqa: BLE001 -- kept and re-raised on the caller's thread
            self._error = (step, e)

    def _sync(self, what: str) -> None:
        if jax.process_count() > 1:
            self._barriers += 1
            ocp.multihost.sync_global_processes(f"pdx-checkpoint-{what}-{self._barriers}")

    def _finish_pending(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._error is not None:
            step, err = self._error
            self._error = None
            raise CheckpointSaveError(
                f"saving step {step} to {self.directory} failed: {type(err).__name__}: {err}. "
                f"Step {step} was not committed; latest committed step is {self.latest_step()}. "
                "Fix the cause (disk space, permissions) and save again.", step=step) from err

    def _apply_retention(self) -> None:
        steps = self.all_steps()
        if self.max_to_keep is None:
            return
        keep = set(steps[-self.max_to_keep:])
        if self.keep_period is not None:
            keep.update(s for s in steps if s % self.keep_period == 0)
        for s in steps:
            if s not in keep:
                delete_step(self.directory / str(s))
        for path in incomplete_dirs(self.directory):
            shutil.rmtree(path, ignore_errors=True)

    def wait_until_finished(self) -> None:
        """Block until the pending save committed; raise `CheckpointSaveError` if it failed."""
        self._finish_pending()

    def close(self) -> None:
        """Wait for the pending save (raising its error) and restore the SIGTERM handler."""
        if self._closed:
            return
        self._closed = True
        try:
            self._finish_pending()
        finally:
            self._ckptr.close()
            if self._previous_handler is not None:
                signal.signal(signal.SIGTERM, self._previous_handler)
                self._previous_handler = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _check_open(self):
        if self._closed:
            raise RuntimeError(f"CheckpointManager({str(self.directory)!r}) is closed; create a new one")

    # -- restore / verify ---------------------------------------------------------------------------------
    def restore(self, step: int | None = None, target=None, shardings=None, *, dtype=None,
                verify: bool | None = None) -> Checkpoint:
        """Restore a committed step onto the current devices.

        Args:
          step: the step (None: latest committed).
          target: pytree of arrays / jax.ShapeDtypeStruct giving the wanted structure,
            dtypes and shardings. A subtree of the saved state (e.g. `{"params": ...}`)
            restores only those leaves. None: the saved structure as nested dicts.
          shardings: a Sharding for every leaf, or a pytree of them (matching target
            or the saved tree): restores onto any mesh / device count.
          dtype: cast floating leaves to this dtype (e.g. jnp.bfloat16).
          verify: check sha256 of every file first (default: `verify_on_restore`).

        Returns:
          `Checkpoint(step, state, data_state, metadata)`.

        Raises:
          CheckpointNotFoundError: no such committed step, or it was deleted (e.g. by another
            process's retention) while being restored.
          CheckpointIncompleteError: the step was never committed.
          CheckpointCorruptError: a file fails its manifest check, is not a regular file, links
            outside the step, or the step was renamed (names the file).
          CheckpointTopologyError: the arrays were sharded over devices this job lacks
            and neither `shardings` nor sharded `target` leaves say where they go.
        """
        self._check_open()
        self._finish_pending()
        step_dir = step_dir_of(self.directory, step)
        verify = self.verify_on_restore if verify is None else verify
        try:
            manifest, meta = _manifest.check_step(step_dir)  # before orbax opens any file
            state = restore_hashing(step_dir, manifest, verify, lambda: restore_step(
                step_dir, target, shardings, dtype=dtype))
        except Exception as e:
            self._raise_if_deleted(step_dir, "restored", e)
            raise
        return Checkpoint(int(step_dir.name), state, meta.get("data_state"), meta.get("metadata"))

    def _raise_if_deleted(self, step_dir: Path, doing: str, error: Exception) -> None:
        """Turn any failure into CheckpointNotFoundError when the step vanished meanwhile.

        Deletion renames a step away before removing it, so a step whose files went
        missing under a reader is no longer committed by the time the reader looks.
        """
        if not _manifest.is_committed(step_dir):
            raise CheckpointNotFoundError(
                f"step {step_dir.name} in {self.directory} was deleted while it was being {doing} "
                f"(retention by a process saving there, or `pdx ckpt prune`); committed steps now: "
                f"{self.all_steps()}") from error

    def verify(self, step: int | None = None) -> None:
        """Check every file of `step` (latest when None) against its manifest.

        Raises:
          CheckpointCorruptError: naming the first file that does not match (see `restore`).
        """
        step_dir = step_dir_of(self.directory, step)
        try:
            _manifest.verify_step(step_dir)
        except Exception as e:
            self._raise_if_deleted(step_dir, "verified", e)
            raise

    def delete(self, step: int) -> None:
        """Delete one committed step."""
        delete_step(step_dir_of(self.directory, step))


def delete_step(step_dir: Path) -> None:
    """Delete a step directory.

    It is renamed to `<step>.deleting` first (atomic), so a reader sees the whole
    committed step or no step, never a half-deleted one; then the marker goes, then the rest.
    """
    step_dir = Path(step_dir)
    doomed = step_dir.with_name(step_dir.name.split(".")[0] + DELETING)
    if doomed != step_dir:
        if doomed.exists():
            shutil.rmtree(doomed)
        os.rename(step_dir, doomed)
    marker = doomed / _manifest.COMMITTED
    if marker.exists():
        marker.unlink()
    shutil.rmtree(doomed)


def _versions() -> dict:
    import importlib.metadata

    out = {}
    for dist in ("pdx", "jax", "orbax-checkpoint"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            pass
    return out
