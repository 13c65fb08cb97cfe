"""pdx.audio.features: Paddle's `paddle.audio.features` layers (Spectrogram, MelSpectrogram, LogMelSpectrogram, MFCC).

See ../README.md.
"""

from pdx.audio.features._layers import MFCC
from pdx.audio.features._layers import LogMelSpectrogram
from pdx.audio.features._layers import MelSpectrogram
from pdx.audio.features._layers import Spectrogram

__all__ = [
    "LogMelSpectrogram",
    "MFCC",
    "MelSpectrogram",
    "Spectrogram",
]
