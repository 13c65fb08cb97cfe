"""pdx.audio: Paddle's `paddle.audio` namespace; so far its `functional` and `features` parts.

`pdx.audio.functional` has the window functions and spectral helpers;
`pdx.audio.features` the Spectrogram/MelSpectrogram/LogMelSpectrogram/MFCC layers
built from them and `pdx.signal.stft`. See README.md.
"""

from pdx.audio import features, functional

__all__ = ["features", "functional"]
