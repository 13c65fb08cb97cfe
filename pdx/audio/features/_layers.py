"""Spectrogram feature layers (`paddle.audio.features`): STFT power, mel, log-mel and MFCC."""

from __future__ import annotations

import jax.numpy as jnp

from pdx.audio.functional import compute_fbank_matrix, create_dct, get_window, power_to_db
from pdx.nn import Layer
from pdx.signal import stft


class Spectrogram(Layer):
    """`|stft(x)| ** power` of `[T]` or `[B, T]` signals -> `[B, 1 + n_fft // 2, num_frames]`.

    Args:
      n_fft: FFT size.
      hop_length: samples between frames (None: `n_fft // 4`).
      win_length: window size (default `n_fft`).
      window: a window name or (name, *parameters) for `pdx.audio.functional.get_window`.
      power: exponent of the magnitude (1: magnitude, 2: power).
      center: pad the signal so frames are centered.
      pad_mode: padding for `center` ('reflect' or 'constant').
      dtype: dtype of the window.

    Example:
      >>> import pdx
      >>> pdx.audio.features.Spectrogram(n_fft=16, hop_length=4)(pdx.ones([2, 64])).shape
      (2, 9, 17)
    """

    def __init__(self, n_fft=512, hop_length=512, win_length=None, window="hann", power=1.0, center=True,
                 pad_mode="reflect", dtype="float32", *, rngs=None):
        super().__init__()
        self.n_fft, self.hop_length, self.power = n_fft, hop_length, float(power)
        self.win_length = n_fft if win_length is None else win_length
        self.center, self.pad_mode = bool(center), pad_mode
        self.register_buffer("fft_window", get_window(window, self.win_length, fftbins=True, dtype=dtype))

    def forward(self, x):
        spec = stft(x, self.n_fft, hop_length=self.hop_length, win_length=self.win_length,
                    window=self.fft_window[...], center=self.center, pad_mode=self.pad_mode)
        return jnp.abs(spec) ** self.power


class MelSpectrogram(Layer):
    """Mel-scaled spectrogram: a mel filter bank applied to `Spectrogram` -> `[B, n_mels, num_frames]`.

    Args:
      sr: sample rate.
      n_fft, hop_length, win_length, window, power, center, pad_mode: as `Spectrogram`.
      n_mels: number of mel bands.
      f_min: lowest frequency (Hz).
      f_max: highest frequency (default `sr / 2`).
      htk: use the HTK mel formula.
      norm: filter normalization ('slaney', a number p, or None).
      dtype: dtype of the window and filter bank.

    Example:
      >>> import pdx
      >>> pdx.audio.features.MelSpectrogram(16000, n_fft=64, hop_length=16, n_mels=8)(pdx.ones([2, 256])).shape
      (2, 8, 17)
    """

    def __init__(self, sr=22050, n_fft=2048, hop_length=512, win_length=None, window="hann", power=2.0,
                 center=True, pad_mode="reflect", n_mels=64, f_min=50.0, f_max=None, htk=False, norm="slaney",
                 dtype="float32", *, rngs=None):
        super().__init__()
        self._spectrogram = Spectrogram(n_fft, hop_length, win_length, window, power, center, pad_mode, dtype)
        self.n_mels, self.f_min, self.f_max, self.htk, self.norm = n_mels, f_min, f_max, htk, norm
        self.register_buffer("fbank_matrix", compute_fbank_matrix(sr, n_fft, n_mels, f_min, f_max, htk, norm, dtype))

    def forward(self, x):
        return jnp.matmul(self.fbank_matrix[...], self._spectrogram(x))


class LogMelSpectrogram(Layer):
    """Log-mel spectrogram in decibels: `power_to_db(MelSpectrogram(x))`.

    Args:
      sr, n_fft, hop_length, win_length, window, power, center, pad_mode, n_mels, f_min, f_max,
        htk, norm, dtype: as `MelSpectrogram`.
      ref_value, amin, top_db: as `pdx.audio.functional.power_to_db` (`top_db` clips below the
        maximum of the whole batch, as Paddle does).

    Example:
      >>> import pdx
      >>> pdx.audio.features.LogMelSpectrogram(16000, n_fft=64, hop_length=16, n_mels=8)(pdx.ones([256])).shape
      (8, 17)
    """

    def __init__(self, sr=22050, n_fft=512, hop_length=None, win_length=None, window="hann", power=2.0,
                 center=True, pad_mode="reflect", n_mels=64, f_min=50.0, f_max=None, htk=False, norm="slaney",
                 ref_value=1.0, amin=1e-10, top_db=None, dtype="float32", *, rngs=None):
        super().__init__()
        self._melspectrogram = MelSpectrogram(sr, n_fft, hop_length, win_length, window, power, center, pad_mode,
                                              n_mels, f_min, f_max, htk, norm, dtype)
        self.ref_value, self.amin, self.top_db = ref_value, amin, top_db

    def forward(self, x):
        return power_to_db(self._melspectrogram(x), ref_value=self.ref_value, amin=self.amin, top_db=self.top_db)


class MFCC(Layer):
    """Mel-frequency cepstral coefficients: the DCT of the log-mel spectrogram -> `[B, n_mfcc, num_frames]`.

    Args:
      sr: sample rate.
      n_mfcc: number of coefficients (at most `n_mels`).
      n_fft, hop_length, win_length, window, power, center, pad_mode, n_mels, f_min, f_max, htk,
        norm, ref_value, amin, top_db, dtype: as `LogMelSpectrogram`.

    Example:
      >>> import pdx
      >>> pdx.audio.features.MFCC(16000, n_mfcc=5, n_fft=64, hop_length=16, n_mels=8)(pdx.ones([2, 256])).shape
      (2, 5, 17)
    """

    def __init__(self, sr=22050, n_mfcc=40, n_fft=512, hop_length=None, win_length=None, window="hann", power=2.0,
                 center=True, pad_mode="reflect", n_mels=64, f_min=50.0, f_max=None, htk=False, norm="slaney",
                 ref_value=1.0, amin=1e-10, top_db=None, dtype="float32", *, rngs=None):
        super().__init__()
        if n_mfcc > n_mels:
            raise ValueError(f"pdx.audio.features.MFCC: `n_mfcc`={n_mfcc} must be at most n_mels={n_mels}")
        self._log_melspectrogram = LogMelSpectrogram(sr, n_fft, hop_length, win_length, window, power, center,
                                                     pad_mode, n_mels, f_min, f_max, htk, norm, ref_value, amin,
                                                     top_db, dtype)
        self.register_buffer("dct_matrix", create_dct(n_mfcc, n_mels, dtype=dtype))

    def forward(self, x):
        log_mel = self._log_melspectrogram(x)  # (..., n_mels, frames)
        return jnp.swapaxes(jnp.swapaxes(log_mel, -1, -2) @ self.dct_matrix[...], -1, -2)
