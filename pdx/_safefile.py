"""The one rule every pdx loader follows before it parses a byte.

Checkpoints, export artifacts, `pdx.load`, `Model.load`, `.pdparams` and the
server's request bodies all read through these helpers:

- open regular files only: FIFOs, devices, sockets and directories are
  refused (a FIFO would block forever, `/dev/zero` never ends);
- symlinks are followed only when they stay inside the directory the caller
  names as `root` (an artifact may link its own files, never `/etc/passwd`);
- the size is known from `fstat` before reading and checked against a cap;
- JSON is decoded with an explicit encoding (UTF-8, strict) and its nesting
  depth is checked on the decoded text before `json.loads` sees it.

Every failure raises the caller's typed error class (`error=`), so each package
keeps its one error type. A checksum proves a file is the one that was written,
not who wrote it: these checks stop hangs, memory blow-ups and reads outside
the artifact, they are not a signature.

Example:
    >>> import json, tempfile, os
    >>> d = tempfile.mkdtemp(); p = os.path.join(d, "m.json")
    >>> _ = open(p, "w").write(json.dumps({"a": [1, 2]}))
    >>> load_json(read_file(p, max_bytes=1 << 20, what="manifest"), what="manifest")
    {'a': [1, 2]}
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

import numpy as np

__all__ = ["UnsafeFileError", "open_regular", "read_file", "load_json", "json_depth", "MAX_JSON_DEPTH"]

MAX_JSON_DEPTH = 64
# A complete JSON string literal (unrolled: linear time, no catastrophic backtracking).
_JSON_STRING_RE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET_RE = re.compile(r"[^\[\]{}]+")


class UnsafeFileError(ValueError):
    """Default error when no package error class is given."""


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "not a regular file"


def _check_link(path: Path, root, what: str, error) -> None:
    """Refuse a symlink anywhere on the path that leads outside `root`."""
    if not os.path.islink(path) and root is None:
        return
    real = Path(os.path.realpath(path))
    if root is None:
        raise error(f"{what} {str(path)!r} is a symlink (to {str(real)!r}); pdx reads regular files only. "
                    "Copy the file in place of the link.")
    real_root = Path(os.path.realpath(root))
    if real != real_root and real_root not in real.parents:
        raise error(f"{what} {str(path)!r} resolves to {str(real)!r}, outside {str(root)!r}; "
                    "files of an artifact or checkpoint must stay inside its directory.")


def open_regular(path, *, what: str = "file", root=None, error=UnsafeFileError) -> tuple[int, int]:
    """Open `path` read-only if it is a regular file; returns `(fd, size)`.

    Opening is non-blocking, so a FIFO is refused instead of waiting for a
    writer. `root`: symlinks (anywhere on the path) must resolve inside it;
    without `root`, `path` itself must not be a symlink. The caller closes fd.
    """
    path = Path(path)
    _check_link(path, root, what, error)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise error(f"{what} {str(path)!r} does not exist") from None
    except OSError as e:
        raise error(f"cannot open {what} {str(path)!r}: {e.strerror or e}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise error(f"{what} {str(path)!r} is {_kind(st.st_mode)}; pdx reads regular files only")
    return fd, st.st_size


def read_file(path, *, max_bytes: int, what: str = "file", root=None, error=UnsafeFileError,
              size: int | None = None) -> bytes:
    """All bytes of a regular file whose size (known before reading) is at most `max_bytes`.

    `size`: the exact size recorded for the file (in a manifest); any other
    size is refused before reading.
    """
    fd, actual = open_regular(path, what=what, root=root, error=error)
    try:
        if size is not None and actual != size:
            raise error(f"{what} {str(path)!r} is {actual} bytes but {size} bytes were recorded for it: "
                        "the file is truncated or was replaced")
        size = actual
        if size > max_bytes:
            raise error(f"{what} {str(path)!r} is {size} bytes, over the limit of {max_bytes}; "
                        "it is not a file pdx wrote (or raise the limit argument if it is)")
        chunks, left = [], size
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 24))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) != size:
            raise error(f"{what} {str(path)!r} changed size while being read ({size} -> {len(data)} bytes)")
        return data
    finally:
        os.close(fd)


def json_depth(text: str) -> int:
    """Maximum nesting depth of `[`/`{` in JSON text, ignoring brackets inside strings.

    Linear time with no Python loop per character (request bodies run to megabytes).
    """
    if '"' in text:
        text = _JSON_STRING_RE.sub("", text)
        cut = text.find('"')  # an unterminated string: nothing after it nests
        if cut >= 0:
            text = text[:cut]
    brackets = _NOT_BRACKET_RE.sub("", text)
    if not brackets:
        return 0
    codes = np.frombuffer(brackets.encode("ascii"), np.uint8)
    steps = np.where((codes == ord("[")) | (codes == ord("{")), 1, -1)
    return max(0, int(np.cumsum(steps).max()))


def load_json(data, *, what: str = "JSON", max_depth: int = MAX_JSON_DEPTH, max_bytes: int | None = None,
              error=UnsafeFileError):
    """Parse JSON bytes decoded strictly as UTF-8, refusing nesting deeper than `max_depth`.

    `json.loads(bytes)` guesses UTF-16/32 from the first bytes; decoding
    explicitly here means the depth check and the parser see the same text.
    """
    if isinstance(data, (bytes, bytearray, memoryview)):
        if max_bytes is not None and len(data) > max_bytes:
            raise error(f"{what} is {len(data)} bytes, over the limit of {max_bytes}")
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as e:
            raise error(f"{what} is not UTF-8 text ({e.reason} at byte {e.start}); send UTF-8 JSON") from None
    elif isinstance(data, str):
        text = data
    else:
        raise TypeError(f"load_json takes bytes or str, got {type(data).__name__}")
    depth = json_depth(text)
    if depth > max_depth:
        raise error(f"{what} nests {depth} levels deep, over the nesting depth limit of {max_depth}")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as e:
        raise error(f"{what} is not valid JSON: {e}") from None
