"""Imported last by the DataLoader's fork server (`pdx.io._worker._SERVER_PRELOAD`).

It moves every object the server has made so far (the modules it preloaded:
JAX, grain, numpy, pdx's core) into the garbage collector's permanent
generation (`gc.freeze()`). A worker forked from the server then never walks
those objects in its own collections: a worker's first full collection
(unpickling its dataset allocates enough to start one) took about 90 ms with
them before its first batch, and walking them would also copy their memory
pages into every worker.

Only the fork server freezes: the import must come from inside
`multiprocessing.forkserver.main` (its preload step); imported anywhere else
this module does nothing.
"""

from __future__ import annotations

import gc
import sys

__all__ = ["frozen"]


def _in_fork_server() -> bool:
    """Whether this import runs inside the fork server's preload (a frame of forkserver.main)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "main" and frame.f_globals.get("__name__") == "multiprocessing.forkserver":
            return True
        frame = frame.f_back
    return False


frozen = _in_fork_server()
if frozen:
    gc.collect()  # what is garbage now is freed, not frozen
    gc.freeze()
