"""pdx.audio.functional against the installed paddle.audio.functional."""

import jax.numpy as jnp
import numpy as np
import pytest

import pdx.audio.functional as A

WINDOWS = ["hamming", "hann", "blackman", "nuttall", "bartlett", "triang", "bohman", "cosine", "tukey", "taylor",
           ("gaussian", 3.0), ("general_gaussian", 1.5, 2.0), ("exponential", None, 2.0), ("tukey", 0.3),
           ("taylor", 5, 40, False), ("kaiser", 6.0)]


def test_windows_match_paddle(paddle):
    af = paddle.audio.functional
    for window in WINDOWS:
        for n in (1, 7, 16):
            for fftbins in (True, False):
                ours = np.asarray(A.get_window(window, n, fftbins, dtype="float32"))
                theirs = af.get_window(window, n, fftbins, dtype="float32").numpy()
                assert ours.shape == theirs.shape, (window, n, fftbins)
                np.testing.assert_allclose(ours, theirs, atol=1e-6, err_msg=f"{window} {n} {fftbins}")
    np.testing.assert_allclose(A.get_window(("exponential", 3, 2.0), 8),
                               af.get_window(("exponential", 3, 2.0), 8).numpy(), atol=1e-6)


def test_features_match_paddle(paddle, rng):
    af = paddle.audio.functional
    for htk in (False, True):
        for f in (300.0, 1000.0, 4321.0):
            assert abs(A.hz_to_mel(f, htk) - af.hz_to_mel(f, htk)) < 1e-6 * max(1.0, f)
            m = af.hz_to_mel(f, htk)
            assert abs(A.mel_to_hz(m, htk) - af.mel_to_hz(m, htk)) < 1e-3
        freqs = np.array([100.0, 999.0, 1500.0, 7000.0], np.float32)
        np.testing.assert_allclose(A.hz_to_mel(jnp.asarray(freqs), htk),
                                   af.hz_to_mel(paddle.to_tensor(freqs), htk).numpy(), rtol=1e-5)
        mels = np.array([1.0, 14.0, 20.0, 40.0], np.float32)
        np.testing.assert_allclose(A.mel_to_hz(jnp.asarray(mels), htk),
                                   af.mel_to_hz(paddle.to_tensor(mels), htk).numpy(), rtol=1e-5)
        np.testing.assert_allclose(A.mel_frequencies(10, 20.0, 8000.0, htk),
                                   af.mel_frequencies(10, 20.0, 8000.0, htk).numpy(), rtol=1e-5)
        for norm in ("slaney", 2.0, None):
            np.testing.assert_allclose(A.compute_fbank_matrix(16000, 256, 20, 50.0, None, htk, norm),
                                       af.compute_fbank_matrix(16000, 256, 20, 50.0, None, htk, norm).numpy(),
                                       rtol=1e-4, atol=1e-5, err_msg=f"fbank htk={htk} norm={norm}")
    np.testing.assert_allclose(A.fft_frequencies(22050, 15), af.fft_frequencies(22050, 15).numpy(), rtol=1e-6)
    spect = (rng.random((3, 20)) ** 4 * 100).astype(np.float32)
    for kw in ({}, {"ref_value": 2.0, "amin": 1e-5, "top_db": 30.0}, {"top_db": None}):
        np.testing.assert_allclose(A.power_to_db(jnp.asarray(spect), **kw),
                                   af.power_to_db(paddle.to_tensor(spect), **kw).numpy(), rtol=1e-5, atol=1e-4)
    for norm in ("ortho", None):
        np.testing.assert_allclose(A.create_dct(13, 40, norm), af.create_dct(13, 40, norm).numpy(), atol=1e-6)


def test_bad_arguments_name_the_argument():
    checks = [
        (lambda: A.get_window("boxcar", 8), "`window`"),
        (lambda: A.get_window("gaussian", 8), "`window`"),
        (lambda: A.get_window("exponential", 8), "`window`"),
        (lambda: A.get_window(3, 8), "`window`"),
        (lambda: A.get_window("hann", -1), "`win_length`"),
        (lambda: A.get_window("hann", 8, dtype="int32"), "`dtype`"),
        (lambda: A.power_to_db(jnp.ones(3), amin=0), "`amin`"),
        (lambda: A.create_dct(4, 8, norm="l2"), "`norm`"),
        (lambda: A.compute_fbank_matrix(16000, 64, norm="bad"), "`norm`"),
    ]
    for call, fragment in checks:
        with pytest.raises(ValueError, match=fragment):
            call()


def test_feature_layers_match_paddle(paddle, rng):
    import pdx.audio.features as FE

    x = rng.standard_normal((2, 400)).astype(np.float32)
    cases = [
        ("Spectrogram", dict(n_fft=64, hop_length=16)),
        ("Spectrogram", dict(n_fft=64, hop_length=20, win_length=48, window=("kaiser", 5.0), power=2.0)),
        ("MelSpectrogram", dict(sr=16000, n_fft=128, hop_length=32, n_mels=20)),
        ("MelSpectrogram", dict(sr=8000, n_fft=64, hop_length=16, n_mels=10, htk=True, norm=None, f_max=3000.0)),
        ("LogMelSpectrogram", dict(sr=16000, n_fft=128, hop_length=32, n_mels=20, top_db=60.0)),
        ("MFCC", dict(sr=16000, n_mfcc=13, n_fft=128, hop_length=32, n_mels=24)),
    ]
    for name, kw in cases:
        ours = np.asarray(getattr(FE, name)(**kw)(jnp.asarray(x)))
        theirs = getattr(paddle.audio.features, name)(**kw)(paddle.to_tensor(x)).numpy()
        assert ours.shape == theirs.shape, name
        scale = max(1.0, float(np.abs(theirs).max()))
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-4 * scale, err_msg=f"{name} {kw}")
