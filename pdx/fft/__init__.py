"""pdx.fft: Paddle's `paddle.fft` namespace (discrete Fourier transforms) over jax.numpy.fft.

Arguments follow Paddle: `n`/`axis` for 1-D transforms, `s`/`axes` for 2-D and N-D ones,
`norm` in 'backward' (default), 'ortho', 'forward'. See README.md in this folder.
"""

from pdx.fft._fft import fft
from pdx.fft._fft import fft2
from pdx.fft._fft import fftfreq
from pdx.fft._fft import fftn
from pdx.fft._fft import fftshift
from pdx.fft._fft import hfft
from pdx.fft._fft import hfft2
from pdx.fft._fft import hfftn
from pdx.fft._fft import ifft
from pdx.fft._fft import ifft2
from pdx.fft._fft import ifftn
from pdx.fft._fft import ifftshift
from pdx.fft._fft import ihfft
from pdx.fft._fft import ihfft2
from pdx.fft._fft import ihfftn
from pdx.fft._fft import irfft
from pdx.fft._fft import irfft2
from pdx.fft._fft import irfftn
from pdx.fft._fft import rfft
from pdx.fft._fft import rfft2
from pdx.fft._fft import rfftfreq
from pdx.fft._fft import rfftn

__all__ = [
    "fft",
    "fft2",
    "fftfreq",
    "fftn",
    "fftshift",
    "hfft",
    "hfft2",
    "hfftn",
    "ifft",
    "ifft2",
    "ifftn",
    "ifftshift",
    "ihfft",
    "ihfft2",
    "ihfftn",
    "irfft",
    "irfft2",
    "irfftn",
    "rfft",
    "rfft2",
    "rfftfreq",
    "rfftn",
]
