"""pdx.audio: Paddle's `paddle.audio` namespace; so far its `functional` part.

`pdx.audio.functional` has the window functions and spectral helpers that
`pdx.signal.stft` and mel features are built from. See README.md.
"""

from pdx.audio import functional

__all__ = ["functional"]
