"""`ProgressBar`: Paddle's text progress bar (`paddle.hapi.progressbar.ProgressBar`).

The same output as Paddle's: `verbose=1` redraws one line
(`step  3/10 [======>.......] - loss: 0.5000 - ETA: 2s - 10ms/step`),
`verbose=2` / `3` print one line per update
(`step  3/10 - loss: 0.5000 - 10ms/step`). `pdx.callbacks.ProgBarLogger` is
what `Model.fit` shows; this class is for loops written against Paddle's.

Example:
    >>> import io
    >>> from pdx.hapi.progressbar import ProgressBar
    >>> out = io.StringIO()
    >>> bar = ProgressBar(num=2, verbose=2, file=out)
    >>> bar.update(1, [("loss", 0.25)])
    >>> out.getvalue().split(" - ")[:2]
    ['step 1/2', 'loss: 0.2500']
"""

from __future__ import annotations

import math
import os
import shutil
import sys
import time

import numpy as np

__all__ = ["ProgressBar"]


def _format_value(v) -> str:
    if isinstance(v, np.ndarray) and v.size == 1 and v.dtype.kind == "f":
        v = v.item()
    if isinstance(v, (float, np.floating)):
        return f"{v:.4f}" if abs(v) > 1e-3 else f"{v:.4e}"
    return f"{v}"


def _format_values(values) -> str:
    info = ""
    for k, val in values or ():
        info += f" - {k}:"
        for v in val if isinstance(val, list) else [val]:
            info += " " + _format_value(v)
    return info


def _eta(seconds: int) -> str:
    if seconds > 3600:
        return f"{seconds // 3600}:{(seconds % 3600) // 60:02}:{seconds % 60:02}"
    if seconds > 60:
        return f"{seconds // 60}:{seconds % 60:02}"
    return f"{seconds}s"


class ProgressBar:
    """A text progress bar over `num` steps (None: unknown length).

    Args:
      num: the total number of steps, or None.
      width: the bar's width in characters (at most 60% of the terminal).
      verbose: 1 redraws a bar in place; 2 or 3 print a line per update.
      start: start the clock now (else call `start()`).
      file: where to write (default stdout).
      name: the unit shown (`step`).
    """

    def __init__(self, num=None, width=30, verbose=1, start=True, file=sys.stdout, name="step"):
        if num is not None and (isinstance(num, bool) or not isinstance(num, int) or num <= 0):
            raise TypeError(f"ProgressBar: num should be None or integer (> 0); got num={num!r}")
        columns = shutil.get_terminal_size().columns or 80
        self._num = num
        self._width = min(int(width), min(int(columns * 0.6), columns - 50))
        self._total_width = 0
        self._verbose = verbose
        self.file = file
        self.name = name
        self._start = time.time() if start else None
        self._last_update = 0.0
        self._dynamic_display = (hasattr(file, "isatty") and file.isatty()) or "ipykernel" in sys.modules \
            or os.name == "posix" or "PYCHARM_HOSTED" in os.environ

    def start(self) -> None:
        """Start (or restart) the clock."""
        self.file.flush()
        self._start = time.time()

    def _rate(self, current_num: int, now: float) -> tuple[float, str]:
        per_unit = (now - (self._start or now)) / current_num if current_num else 0.0
        if per_unit >= 1 or per_unit == 0:
            return per_unit, f" - {per_unit:.0f}s/{self.name}"
        if per_unit >= 1e-3:
            return per_unit, f" - {per_unit * 1e3:.0f}ms/{self.name}"
        return per_unit, f" - {per_unit * 1e6:.0f}us/{self.name}"

    def _count(self, current_num: int) -> str:
        if self._num is None:
            return f"{self.name} {current_num:3}"
        digits = int(math.log10(self._num)) + 1
        return f"{self.name} {current_num:{digits}d}/{self._num}"

    def update(self, current_num: int, values=None) -> None:
        """Show step `current_num` with `values`, a list of (name, value or list of values)."""
        now = time.time()
        per_unit, fps = self._rate(current_num, now)
        write = self.file.write
        if self._verbose == 1:
            previous = self._total_width
            write("\b" * previous + "\r" if self._dynamic_display else "\n")
            bar = self._count(current_num)
            if self._num is not None:
                done = int(self._width * float(current_num) / self._num)
                bar += " ["
                if done > 0:
                    bar += "=" * (done - 1) + (">" if current_num < self._num else "=")
                bar += "." * (self._width - done) + "]"
            self._total_width = len(bar)
            write(bar)
            info = _format_values(values)
            if self._num is not None and current_num < self._num:
                info += f" - ETA: {_eta(int(per_unit * (self._num - current_num)))}"
            info += fps
            self._total_width += len(info)
            if previous > self._total_width:
                info += " " * (previous - self._total_width)
            if self._num is None or current_num >= self._num:
                info += "\n"
            write(info)
        elif self._verbose in (2, 3):
            write(self._count(current_num) + _format_values(values) + fps + "\n")
        self.file.flush()
        self._last_update = now
