"""Per-file sha256 manifest, commit marker and recorded step of a checkpoint step directory.

A step directory is committed when it holds `MANIFEST.json` (size and
sha256 of every other file) and `COMMITTED` (the sha256 of the manifest),
written in that order and only after every data file is on disk.

Before orbax reads a byte, `check_step` proves the directory is the one
that was committed, without hashing:

- the marker is exactly 64 lowercase hex digits and a newline, and matches
  the manifest's sha256;
- the manifest parses (UTF-8, size and depth limits) and carries a non-empty
  checksum table of relative paths inside the step (no table is an error,
  never a skip);
- every entry under the directory is a regular file or a directory (a FIFO
  would block a reader forever, `/dev/zero` never ends); a symlink must
  resolve inside the step directory;
- exactly the listed files are present, each with its recorded size;
- `pdx_meta.json` records the step the directory is named after (a renamed
  or copied step is refused).

`hash_step` then re-hashes every file (opened with the same rules), so a
flipped bit is found and named. A sha256 proves the bytes are the ones that
were committed, not who committed them: anyone who can write the directory
can write a matching manifest and marker. It is not a signature.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import io
import json
import os
import re
import stat
from pathlib import Path

from pdx._safefile import load_json, open_regular, read_file
from pdx.checkpoint._errors import CheckpointCorruptError, CheckpointIncompleteError

__all__ = ["MANIFEST", "COMMITTED", "META", "FORMAT", "write_manifest", "read_manifest", "read_meta", "check_step",
           "hash_step", "verify_step", "is_committed", "fsync_dir", "recorded_step_of"]

MANIFEST = "MANIFEST.json"
COMMITTED = "COMMITTED"
META = "pdx_meta.json"
FORMAT = "pdx-checkpoint/1"
MAX_MANIFEST_BYTES = 256 << 20
MAX_META_BYTES = 64 << 20
MAX_META_DEPTH = 64  # data_state / metadata may nest up to MAX_META_DEPTH - 1 levels
_MANIFEST_DEPTH = 3  # {"files": {name: {"bytes", "sha256"}}}
_MARKER_RE = re.compile(rb"[0-9a-f]{64}\n")
_SHA_RE = re.compile(r"[0-9a-f]{64}")
_CHUNK = 1 << 20
_THREADS = min(8, os.cpu_count() or 1)


def _corrupt(path):
    """An `error=` for pdx._safefile that names `path` on the raised CheckpointCorruptError."""
    return lambda message: CheckpointCorruptError(message, path=path)


# -- the directory walk ------------------------------------------------------------------------------
def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def _inside(real: str, root_real: str) -> bool:
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


def _walk(step_dir: Path) -> dict[str, int]:
    """Every file under `step_dir` except MANIFEST/COMMITTED: relative posix name -> size.

    Refuses anything that is not a regular file or a directory, and symlinks
    that resolve outside `step_dir` (or nowhere).
    """
    root_real = os.path.realpath(step_dir)
    files = {}

    def fail(err: OSError):
        raise CheckpointCorruptError(f"cannot list {err.filename}: {err.strerror or err}", path=err.filename)

    for dirpath, dirnames, filenames in os.walk(step_dir, onerror=fail):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, step_dir).replace(os.sep, "/")
            try:
                st = os.lstat(full)
                if stat.S_ISLNK(st.st_mode):
                    real = os.path.realpath(full)
                    if not _inside(real, root_real):
                        raise CheckpointCorruptError(
                            f"{full} is a symlink to {real!r}, outside the checkpoint {step_dir}; a checkpoint's "
                            "files must stay inside its step directory (copy the file in place of the link)",
                            path=Path(full))
                    st = os.stat(full)
            except OSError as e:
                raise CheckpointCorruptError(f"{full} cannot be read: {e.strerror or e}", path=Path(full)) from None
            if stat.S_ISDIR(st.st_mode):
                continue
            if not stat.S_ISREG(st.st_mode):
                raise CheckpointCorruptError(
                    f"{full} is {_kind(st.st_mode)}; a checkpoint holds regular files only (it was replaced "
                    "after the save): restore another step", path=Path(full))
            if rel not in (MANIFEST, COMMITTED):
                files[rel] = st.st_size
    return dict(sorted(files.items()))


def _sha256(step_dir: Path, name: str) -> str:
    path = step_dir / name
    # one small buffer, refilled: a fresh chunk per read costs page faults (a third of the
    # hash's CPU time per GiB) and falls out of the CPU cache before it is hashed
    view = memoryview(bytearray(_CHUNK))
    digest = hashlib.sha256()
    fd, size = open_regular(path, what="checkpoint file", root=step_dir, error=_corrupt(path))
    with io.FileIO(fd, "rb") as f:  # closes fd
        left = size
        # reads and hashlib release the GIL, so files hash in parallel threads
        while left > 0:
            n = f.readinto(view[:min(left, _CHUNK)])
            if not n:
                break
            digest.update(view[:n])
            left -= n
    return digest.hexdigest()


def _hash_all(step_dir: Path, sizes: dict[str, int]) -> dict[str, str]:
    """name -> sha256 of every file in `sizes` (name -> bytes), hashed in parallel threads.

    The largest files start first, so one big file does not start last and hash alone.
    """
    names = sorted(sizes, key=lambda n: -sizes[n])
    with concurrent.futures.ThreadPoolExecutor(_THREADS) as pool:
        return dict(zip(names, pool.map(lambda n: _sha256(step_dir, n), names)))


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    """fsync a directory so renames and new entries in it survive a crash."""
    _fsync(path)


# -- writing ------------------------------------------------------------------------------------------
def write_manifest(step_dir: Path, *, fsync: bool = True) -> dict:
    """Hash every file under `step_dir`, write MANIFEST.json, then COMMITTED.

    Data files are fsync'd before the manifest, and the manifest before the
    marker, so a marker on disk means everything it vouches for is on disk.

    Returns:
      The manifest dict.
    """
    step_dir = Path(step_dir)
    sizes = _walk(step_dir)
    names = list(sizes)
    if META not in sizes:
        raise CheckpointCorruptError(f"{step_dir} has no {META}; nothing to commit", path=step_dir / META)
    if fsync:
        with concurrent.futures.ThreadPoolExecutor(_THREADS) as pool:
            list(pool.map(lambda n: _fsync(step_dir / n), names))
    sums = _hash_all(step_dir, sizes)
    manifest = {"format": FORMAT, "files": {n: {"bytes": sizes[n], "sha256": sums[n]} for n in names}}
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


# -- reading ------------------------------------------------------------------------------------------
def is_committed(step_dir: Path) -> bool:
    """True when the step directory carries both the manifest and the commit marker."""
    step_dir = Path(step_dir)
    return (step_dir / COMMITTED).is_file() and (step_dir / MANIFEST).is_file()


def _valid_name(name) -> bool:
    if not isinstance(name, str) or not name or name.startswith("/") or "\\" in name or "\x00" in name:
        return False
    parts = name.split("/")
    return all(p not in ("", ".", "..") for p in parts) and name not in (MANIFEST, COMMITTED)


def _checked_manifest(manifest, path: Path) -> dict:
    def bad(why: str):
        raise CheckpointCorruptError(f"{path} {why}; it was not written by pdx (or was altered and resealed): "
                                     "restore another step", path=path)

    if not isinstance(manifest, dict):
        bad(f"is a JSON {type(manifest).__name__}, not an object")
    if manifest.get("format") != FORMAT:
        bad(f"has format {manifest.get('format')!r}; expected {FORMAT!r}")
    files = manifest.get("files")
    if not isinstance(files, dict) or not files:
        bad("has no checksum table ('files': {name: {bytes, sha256}}); the table is required")
    for name, entry in files.items():
        if not _valid_name(name):
            bad(f"lists {name!r}, which is not a relative path inside the step directory")
        if (not isinstance(entry, dict) or set(entry) != {"bytes", "sha256"}
                or not isinstance(entry["bytes"], int) or isinstance(entry["bytes"], bool) or entry["bytes"] < 0
                or not isinstance(entry["sha256"], str) or not _SHA_RE.fullmatch(entry["sha256"])):
            bad(f"has a malformed entry for {name!r}: {str(entry)[:200]} (want {{'bytes': int, 'sha256': hex}})")
    if META not in files:
        bad(f"does not list {META} (the recorded step and data state)")
    return manifest


def read_manifest(step_dir: Path) -> dict:
    """The manifest of a committed step, checked against the commit marker.

    Raises:
      CheckpointIncompleteError: no commit marker.
      CheckpointCorruptError: the marker is malformed, the manifest does not match it,
        does not parse, or has no valid checksum table.
    """
    step_dir = Path(step_dir)
    if not is_committed(step_dir):
        raise CheckpointIncompleteError(
            f"{step_dir} is not a committed checkpoint (no {COMMITTED} / {MANIFEST}): its save was "
            "interrupted or failed. Restore an earlier step (CheckpointManager.all_steps() lists the "
            "committed ones) or delete it with `pdx ckpt prune`."
        )
    marker_path, manifest_path = step_dir / COMMITTED, step_dir / MANIFEST
    marker = read_file(marker_path, max_bytes=65, what="commit marker", root=step_dir, error=_corrupt(marker_path))
    if not _MARKER_RE.fullmatch(marker):
        raise CheckpointCorruptError(
            f"{marker_path} is damaged: a commit marker is 64 lowercase hex digits and a newline, got "
            f"{marker[:80]!r}; this checkpoint cannot be trusted, restore another step", path=marker_path)
    blob = read_file(manifest_path, max_bytes=MAX_MANIFEST_BYTES, what="manifest", root=step_dir,
                     error=_corrupt(manifest_path))
    if hashlib.sha256(blob).hexdigest().encode() != marker[:64]:
        raise CheckpointCorruptError(
            f"{manifest_path} does not match the sha256 in {marker_path}: the manifest or the marker was "
            "altered or damaged after commit; this checkpoint cannot be trusted.", path=manifest_path)
    manifest = load_json(blob, what=f"manifest {manifest_path}", max_depth=_MANIFEST_DEPTH,
                         error=_corrupt(manifest_path))
    return _checked_manifest(manifest, manifest_path)


def recorded_step_of(step_dir: Path) -> int | None:
    """The step a directory is named for (`100` and `100.incomplete` -> 100), else None."""
    head = Path(step_dir).name.split(".")[0]
    return int(head) if head.isdigit() else None


def read_meta(step_dir: Path, *, sha256: str | None = None) -> dict:
    """`pdx_meta.json` of a step directory, checked to record the step the directory is named for.

    Args:
      step_dir: the step directory.
      sha256: when given (the manifest's entry), the bytes must hash to it.

    Raises:
      CheckpointCorruptError: unreadable, not a JSON object, recording another step, or
        not matching `sha256`.
    """
    step_dir = Path(step_dir)
    path = step_dir / META
    blob = read_file(path, max_bytes=MAX_META_BYTES, what="checkpoint metadata", root=step_dir, error=_corrupt(path))
    if sha256 is not None and hashlib.sha256(blob).hexdigest() != sha256:
        raise CheckpointCorruptError(f"{path} fails its sha256 check: the data-iterator state and metadata are "
                                     "damaged; restore another step", path=path)
    meta = load_json(blob, what=f"checkpoint metadata {path}", max_depth=MAX_META_DEPTH, error=_corrupt(path))
    if not isinstance(meta, dict):
        raise CheckpointCorruptError(f"{path} is a JSON {type(meta).__name__}, not an object", path=path)
    recorded, named = meta.get("step"), recorded_step_of(step_dir)
    if not isinstance(recorded, int) or isinstance(recorded, bool):
        raise CheckpointCorruptError(f"{path} records no step (got step={recorded!r}); it was not written by "
                                     "pdx's CheckpointManager", path=path)
    if named is not None and recorded != named:
        raise CheckpointCorruptError(
            f"{step_dir} holds step {recorded} (recorded in {META}), not step {named}: the step directory was "
            f"renamed or copied. Rename it back to {recorded}, or restore step {recorded}.", path=step_dir)
    return meta


def check_step(step_dir: Path) -> tuple[dict, dict]:
    """Everything about a committed step except the file hashes; `(manifest, meta)`.

    Fast (no array data is read; the small pdx_meta.json is hashed), and run
    before any file is handed to orbax, so a special file or an outside link
    is refused instead of read.

    Raises:
      CheckpointIncompleteError: the step has no commit marker.
      CheckpointCorruptError: naming the first file that fails a check.
    """
    step_dir = Path(step_dir)
    manifest = read_manifest(step_dir)
    files = manifest["files"]
    present = _walk(step_dir)
    for name, entry in files.items():
        path = step_dir / name
        if name not in present:
            raise CheckpointCorruptError(f"{path} is listed in the manifest but missing", path=path)
        if present[name] != entry["bytes"]:
            raise CheckpointCorruptError(
                f"{path} has {present[name]} bytes but the manifest recorded {entry['bytes']} "
                "(truncated or overwritten)", path=path)
    extra = sorted(set(present) - set(files))
    if extra:
        raise CheckpointCorruptError(
            f"{step_dir / extra[0]} is not in the manifest ({len(extra)} unlisted file(s)): something wrote "
            "into the checkpoint after it was committed", path=step_dir / extra[0])
    return manifest, read_meta(step_dir, sha256=files[META]["sha256"])


def prefetch(step_dir: Path, manifest: dict) -> None:
    """Ask the kernel to read every file of `manifest` into the page cache, in the background.

    The hash and orbax then both read from memory instead of racing each other to
    the disk. Advice only: a file that cannot be opened is left to the readers,
    which report it.
    """
    if not hasattr(os, "posix_fadvise"):
        return
    for name in sorted(manifest["files"], key=lambda n: -manifest["files"][n]["bytes"]):
        try:
            fd = os.open(Path(step_dir) / name, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
        except OSError:
            pass
        finally:
            os.close(fd)


def hash_step(step_dir: Path, manifest: dict) -> None:
    """Re-hash every file listed in `manifest` (from `check_step`); raise on the first mismatch."""
    step_dir = Path(step_dir)
    files = manifest["files"]
    sums = _hash_all(step_dir, {name: entry["bytes"] for name, entry in files.items()})
    for name in sorted(files):
        if sums[name] != files[name]["sha256"]:
            raise CheckpointCorruptError(
                f"{step_dir / name} fails its sha256 check (manifest {files[name]['sha256'][:16]}..., "
                f"file {sums[name][:16]}...): the data is corrupt; restore another step",
                path=step_dir / name)


def verify_step(step_dir: Path) -> dict:
    """Check every file of a committed step against its manifest (`check_step`, then `hash_step`).

    Args:
      step_dir: the step directory (e.g. `ckpts/1000`).

    Returns:
      The manifest (when everything matches).

    Raises:
      CheckpointIncompleteError: the step has no commit marker.
      CheckpointCorruptError: a file is missing, extra, resized, special, linked outside the
        step or has another sha256, the marker or manifest is damaged, or the recorded step
        is not the directory's; the error names the file.

    Example:
      >>> verify_step(Path("ckpts/1000"))["files"]["pdx_meta.json"]["bytes"]   # doctest: +SKIP
      241
    """
    step_dir = Path(step_dir)
    manifest, _ = check_step(step_dir)
    hash_step(step_dir, manifest)
    return manifest
