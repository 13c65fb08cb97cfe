"""read_file and decode_jpeg (Paddle's `paddle.vision.ops`), on the host.

`read_file` opens regular files only and knows the size before reading;
`decode_jpeg` hands the bytes to Pillow's JPEG decoder alone (no other format
plugin, no metadata interpretation), caps the pixel count before decoding, and
turns every decoder failure into one `ValueError` naming the problem.
"""

from __future__ import annotations

import io
import os

import jax.numpy as jnp
import numpy as np

from pdx._safefile import read_file as _read_regular

__all__ = ["read_file", "decode_jpeg"]

MAX_FILE_BYTES = 1 << 30
MAX_PIXELS = 1 << 28  # a JPEG header may announce 65535 x 65535; refuse before allocating
_MODES = ("unchanged", "gray", "rgb")
_JPEG_MAGIC = b"\xff\xd8\xff"


def read_file(filename, name=None):
    """The bytes of a file as a 1-D uint8 array (Paddle's `paddle.vision.ops.read_file`).

    Args:
      filename: path of a regular file (at most 1 GiB; FIFOs, devices and
        directories are refused).

    Returns:
      [num_bytes] uint8.

    Example:
      >>> import tempfile, os
      >>> from pdx.vision.ops import read_file
      >>> p = os.path.join(tempfile.mkdtemp(), "a.bin"); _ = open(p, "wb").write(b"abc")
      >>> read_file(p).tolist()
      [97, 98, 99]
    """
    path = os.fspath(filename)
    # The caller names this file, so a link it is may point anywhere; it must still be a regular file.
    data = _read_regular(path, max_bytes=MAX_FILE_BYTES, what="read_file: file",
                         root=os.path.dirname(os.path.realpath(path)) or ".", error=ValueError)
    return jnp.asarray(np.frombuffer(data, np.uint8))


def decode_jpeg(x, mode="unchanged", name=None):
    """Decode JPEG bytes into a [C, H, W] uint8 image (Paddle's `paddle.vision.ops.decode_jpeg`).

    Paddle decodes on the GPU only (nvJPEG); pdx decodes on the host with
    Pillow's JPEG decoder and returns a jax array.

    Args:
      x: 1-D uint8 bytes of a JPEG file (e.g. from `read_file`).
      mode: 'unchanged' (the file's channels: 1 for grayscale, 3 for color),
        'gray' (1 channel) or 'rgb' (3 channels).

    Returns:
      [C, H, W] uint8.

    Raises:
      ValueError: the bytes are not a complete baseline/progressive JPEG, the
        image is larger than 2**28 pixels, or the arguments are wrong.

    Example:
      >>> import io, numpy as np, jax.numpy as jnp
      >>> from PIL import Image
      >>> from pdx.vision.ops import decode_jpeg
      >>> buf = io.BytesIO(); Image.new("RGB", (5, 4), (255, 0, 0)).save(buf, "JPEG")
      >>> decode_jpeg(jnp.frombuffer(buf.getvalue(), jnp.uint8)).shape
      (3, 4, 5)
    """
    from PIL import Image, JpegImagePlugin

    if mode not in _MODES:
        raise ValueError(f"decode_jpeg: mode={mode!r} is not supported; use one of {list(_MODES)}")
    arr = np.asarray(x)
    if arr.dtype != np.uint8 or arr.ndim != 1:
        raise ValueError(f"decode_jpeg: x must be 1-D uint8 bytes (from read_file); got dtype {arr.dtype}, "
                         f"shape {arr.shape}")
    data = arr.tobytes()
    if not data.startswith(_JPEG_MAGIC):
        raise ValueError(f"decode_jpeg: the data is not a JPEG (it starts with {data[:4]!r}, a JPEG starts "
                         f"with {_JPEG_MAGIC!r})")
    try:
        img = JpegImagePlugin.JpegImageFile(io.BytesIO(data))
        w, h = img.size
        if w * h > MAX_PIXELS:
            raise ValueError(f"decode_jpeg: the JPEG announces {w} x {h} pixels, over the limit of {MAX_PIXELS}")
        img.load()
    except ValueError:
        raise
    except (OSError, SyntaxError, Image.DecompressionBombError) as e:
        raise ValueError(f"decode_jpeg: the data is not a valid JPEG ({e})") from None
    if mode == "gray":
        img = img.convert("L")
    elif mode == "rgb" or img.mode not in ("L", "RGB"):
        img = img.convert("RGB")
    out = np.asarray(img)
    out = out[None] if out.ndim == 2 else np.transpose(out, (2, 0, 1))
    return jnp.asarray(np.ascontiguousarray(out))
