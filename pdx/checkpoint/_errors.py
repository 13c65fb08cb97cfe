"""Typed checkpoint errors: each names the directory or file and the fix."""

from __future__ import annotations

__all__ = [
    "CheckpointError",
    "CheckpointCorruptError",
    "CheckpointIncompleteError",
    "CheckpointNotFoundError",
    "CheckpointSaveError",
    "CheckpointTopologyError",
    "PickleRefusedError",
]


class CheckpointError(Exception):
    """Base class of every pdx checkpoint error."""


class CheckpointCorruptError(CheckpointError):
    """A stored file fails a check: it does not match the manifest (bit rot, truncation, tampering),
    is not a regular file or links outside its directory, the step was renamed, or a weights file
    is malformed.

    Attributes:
      path: the file (or step directory) that failed the check.
    """

    def __init__(self, message: str, path=None):
        super().__init__(message)
        self.path = path


class CheckpointIncompleteError(CheckpointError):
    """The step was never committed (the save was interrupted or failed)."""


class CheckpointNotFoundError(CheckpointError):
    """No committed checkpoint at the requested directory or step."""


class CheckpointSaveError(CheckpointError):
    """An earlier (asynchronous) save failed; that step was not committed.

    Attributes:
      step: the step whose save failed.
    """

    def __init__(self, message: str, step: int | None = None):
        super().__init__(message)
        self.step = step


class CheckpointTopologyError(CheckpointError):
    """The checkpoint's arrays were sharded over devices this job does not have."""


class PickleRefusedError(CheckpointCorruptError, ValueError):
    """A `.pdparams` file is not one `paddle.save` could have written, or it is over a limit.

    Attributes:
      path: the file.
      offset: byte offset of the opcode that was refused (None: the file as a whole).
      opcode: that opcode's name.
    """

    def __init__(self, message: str, path=None, offset: int | None = None, opcode: str | None = None):
        super().__init__(message, path)
        self.offset = offset
        self.opcode = opcode
