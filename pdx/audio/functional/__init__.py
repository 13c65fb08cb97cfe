"""pdx.audio.functional: Paddle's `paddle.audio.functional` (windows, mel scale, filter banks, dB, DCT).

See ../README.md.
"""

from pdx.audio.functional._features import compute_fbank_matrix
from pdx.audio.functional._features import create_dct
from pdx.audio.functional._features import fft_frequencies
from pdx.audio.functional._features import hz_to_mel
from pdx.audio.functional._features import mel_frequencies
from pdx.audio.functional._features import mel_to_hz
from pdx.audio.functional._features import power_to_db
from pdx.audio.functional._window import get_window

__all__ = [
    "compute_fbank_matrix",
    "create_dct",
    "fft_frequencies",
    "get_window",
    "hz_to_mel",
    "mel_frequencies",
    "mel_to_hz",
    "power_to_db",
]
