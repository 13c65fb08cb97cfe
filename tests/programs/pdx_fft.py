"""paddle.fft and paddle.signal on a fixed signal: rfft/irfft, fft2,
fftshift/fftfreq and a short-time Fourier transform."""
import json

import numpy as np
import pdx as paddle

paddle.set_device("cpu")
t = np.arange(64, dtype="float32") / 64.0
sig = paddle.to_tensor(np.sin(2 * np.pi * 5 * t) + 0.5 * np.cos(2 * np.pi * 12 * t))
img = paddle.to_tensor(np.random.RandomState(6).randn(8, 8).astype("float32"))



def shift(x, inverse=False):
    try:
        return paddle.fft.ifftshift(x) if inverse else paddle.fft.fftshift(x)
    except SystemError:  # paddle 3.3.1's eager fftshift hands roll a Tensor of shifts and fails: roll directly
        shifts = [-(n // 2) if inverse else n // 2 for n in x.shape]
        return paddle.roll(x, shifts, axis=list(range(len(x.shape))))


spec = paddle.fft.rfft(sig)
back = paddle.fft.irfft(spec, n=64)
f2 = paddle.fft.fft2(img)
window = paddle.to_tensor(np.hanning(16).astype("float32"))
stft = paddle.signal.stft(sig.unsqueeze(0), n_fft=16, hop_length=4, window=window)
istft = paddle.signal.istft(stft, n_fft=16, hop_length=4, window=window, length=64)
print(json.dumps({
    "rfft_real": paddle.real(spec).numpy().tolist(),
    "rfft_imag": paddle.imag(spec).numpy().tolist(),
    "rfft_peak": int(paddle.abs(spec).argmax()),
    "irfft": back.numpy().tolist(),
    "fftshift_2d": shift(img).numpy().tolist(),
    "fft2_abs": paddle.abs(f2).numpy().tolist(),
    "ifft2_real": paddle.real(paddle.fft.ifft2(f2)).numpy().tolist(),
    "fftfreq": paddle.fft.fftfreq(8, d=0.5).numpy().tolist(),
    "rfftfreq": paddle.fft.rfftfreq(8).numpy().tolist(),
    "fftshift": shift(paddle.fft.fftfreq(8)).numpy().tolist(),
    "ifftshift": shift(paddle.arange(7, dtype="float32"), inverse=True).numpy().tolist(),
    "stft_shape": list(stft.shape),
    "stft_abs": paddle.abs(stft).numpy().tolist(),
    "istft": istft.numpy().tolist(),
}))
