"""pdx.signal: Paddle's `paddle.signal` namespace (short-time Fourier transforms) over jax.numpy.fft.

`stft`/`istft` take Paddle's arguments; `frame`/`overlap_add` (public in
`paddle.signal` though not in its `__all__`) are the framing helpers they are built on.
See README.md in this folder.
"""

from pdx.signal._signal import frame
from pdx.signal._signal import istft
from pdx.signal._signal import overlap_add
from pdx.signal._signal import stft

__all__ = [
    "frame",
    "istft",
    "overlap_add",
    "stft",
]
