"""Per-file sha256 manifest and the commit marker of a checkpoint step.

A step directory is committed when it holds `MANIFEST.json` (size and
sha256 of every other file) and `COMMITTED` (the sha256 of the manifest),
written in that order and only after every data file is on disk. `verify`
re-hashes everything, so a flipped bit, a truncated file or a missing file
is found and named.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import os
from pathlib import Path

from pdx.checkpoint._errors import CheckpointCorruptError, CheckpointIncompleteError

__all__ = ["MANIFEST", "COMMITTED", "FORMAT", "write_manifest", "read_manifest", "verify_step", "is_committed", "fsync_dir"]

MANIFEST = "MANIFEST.json"
COMMITTED = "COMMITTED"
FORMAT = "pdx-checkpoint/1"
_CHUNK = 8 << 20
_THREADS = min(8, os.cpu_count() or 1)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb", buffering=0) as f:
        # hashlib releases the GIL on large updates, so files hash in parallel threads
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _data_files(step_dir: Path) -> list[str]:
    out = []
    for root, _, files in os.walk(step_dir):
        for name in files:
            rel = os.path.relpath(os.path.join(root, name), step_dir)
            if rel not in (MANIFEST, COMMITTED):
                out.append(rel.replace(os.sep, "/"))
    return sorted(out)


def _hash_all(step_dir: Path, names: list[str]) -> dict[str, str]:
    with concurrent.futures.ThreadPoolExecutor(_THREADS) as pool:
        return dict(zip(names, pool.map(lambda n: _sha256(step_dir / n), names)))


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    """fsync a directory so renames and new entries in it survive a crash."""
    _fsync(path)


def write_manifest(step_dir: Path, *, fsync: bool = True) -> dict:
    """Hash every file under `step_dir`, write MANIFEST.json, then COMMITTED.

    Data files are fsync'd before the manifest, and the manifest before the
    marker, so a marker on disk means everything it vouches for is on disk.

    Returns:
      The manifest dict.
    """
    step_dir = Path(step_dir)
    names = _data_files(step_dir)
    if fsync:
        with concurrent.futures.ThreadPoolExecutor(_THREADS) as pool:
            list(pool.map(lambda n: _fsync(step_dir / n), names))
    sums = _hash_all(step_dir, names)
    manifest = {
        "format": FORMAT,
        "files": {n: {"bytes": (step_dir / n).stat().st_size, "sha256": sums[n]} for n in names},
    }
    blob = json.dumps(manifest, indent=1, sort_keys=True).encode()
    _write_durable(step_dir / MANIFEST, blob, fsync)
    _write_durable(step_dir / COMMITTED, hashlib.sha256(blob).hexdigest().encode() + b"\n", fsync)
    return manifest


def _write_durable(path: Path, data: bytes, fsync: bool) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        if fsync:
            os.fsync(f.fileno())


def is_committed(step_dir: Path) -> bool:
    """True when the step directory carries both the manifest and the commit marker."""
    step_dir = Path(step_dir)
    return (step_dir / COMMITTED).is_file() and (step_dir / MANIFEST).is_file()


def read_manifest(step_dir: Path) -> dict:
    """The manifest of a committed step, checked against the commit marker.

    Raises:
      CheckpointIncompleteError: no commit marker.
      CheckpointCorruptError: the manifest does not match the marker or does not parse.
    """
    step_dir = Path(step_dir)
    if not is_committed(step_dir):
        raise CheckpointIncompleteError(
            f"{step_dir} is not a committed checkpoint (no {COMMITTED} / {MANIFEST}): its save was "
            "interrupted or failed. Restore an earlier step (CheckpointManager.all_steps() lists the "
            "committed ones) or delete it with `pdx ckpt prune`."
        )
    blob = (step_dir / MANIFEST).read_bytes()
    want = (step_dir / COMMITTED).read_text().strip()
    if hashlib.sha256(blob).hexdigest() != want:
        raise CheckpointCorruptError(
            f"{step_dir / MANIFEST} does not match the sha256 in {step_dir / COMMITTED}: the manifest "
            "was altered or damaged after commit; this checkpoint cannot be trusted.",
            path=step_dir / MANIFEST,
        )
    try:
        manifest = json.loads(blob)
    except ValueError as e:
        raise CheckpointCorruptError(f"{step_dir / MANIFEST} does not parse: {e}", path=step_dir / MANIFEST) from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        raise CheckpointCorruptError(f"{step_dir / MANIFEST} has no 'files' table", path=step_dir / MANIFEST)
    return manifest


def verify_step(step_dir: Path) -> dict:
    """Check every file of a committed step against its manifest.

    Args:
      step_dir: the step directory (e.g. `ckpts/1000`).

    Returns:
      The manifest (when everything matches).

    Raises:
      CheckpointIncompleteError: the step has no commit marker.
      CheckpointCorruptError: a file is missing, extra, resized or has another sha256;
        the error names the file.
    """
    step_dir = Path(step_dir)
    manifest = read_manifest(step_dir)
    files = manifest["files"]
    present = set(_data_files(step_dir))
    for name, entry in files.items():
        path = step_dir / name
        if name not in present:
            raise CheckpointCorruptError(f"{path} is listed in the manifest but missing", path=path)
        size = path.stat().st_size
        if size != entry["bytes"]:
            raise CheckpointCorruptError(
                f"{path} has {size} bytes but the manifest recorded {entry['bytes']} (truncated or overwritten)",
                path=path)
    extra = sorted(present - set(files))
    if extra:
        raise CheckpointCorruptError(
            f"{step_dir / extra[0]} is not in the manifest ({len(extra)} unlisted file(s)): something wrote "
            "into the checkpoint after it was committed", path=step_dir / extra[0])
    sums = _hash_all(step_dir, sorted(files))
    for name in sorted(files):
        if sums[name] != files[name]["sha256"]:
            raise CheckpointCorruptError(
                f"{step_dir / name} fails its sha256 check (manifest {files[name]['sha256'][:16]}..., "
                f"file {sums[name][:16]}...): the data is corrupt; restore another step",
                path=step_dir / name)
    return manifest
