"""Synthetic OCR data: random strings rendered with Pillow's bundled FreeType font on noisy backgrounds.

Everything is deterministic from a seed (`numpy.random.default_rng`). Pixel values are float32 in
[0, 1], images NCHW with one channel. Class ids for recognition: 0 is the CTC blank, character
`alphabet[i]` is id `i + 1`.
"""

from __future__ import annotations

import functools
import string
from typing import NamedTuple, Sequence

import numpy as np

DEFAULT_ALPHABET = string.digits + string.ascii_lowercase
# Lower case only: in a sans-serif font "l"/"I" and "o"/"O" differ by a pixel or not at all.

_MIN_CONTRAST = 0.35


class RecognitionBatch(NamedTuple):
    """Rendered text lines and their labels."""

    images: np.ndarray    # (N, 1, H, W) float32 in [0, 1]
    labels: np.ndarray    # (N, max_len) int32 class ids (blank-padded with 0)
    lengths: np.ndarray   # (N,) int32 label lengths
    texts: list           # the N strings


class DetectionBatch(NamedTuple):
    """Rendered scenes with several words and their boxes."""

    images: np.ndarray    # (N, 1, H, W) float32 in [0, 1]
    boxes: list           # N arrays (k_i, 4) float32: x0, y0, x1, y1 of each word's ink, in pixels
    texts: list           # N lists of k_i strings


@functools.lru_cache(maxsize=None)
def _font(size: int):
    from PIL import ImageFont

    return ImageFont.load_default(size=size)


def _check_alphabet(alphabet: str) -> None:
    if not alphabet or len(set(alphabet)) != len(alphabet):
        raise ValueError(f"alphabet must be a non-empty string of distinct characters; got alphabet={alphabet!r}")


def random_strings(n: int, *, seed: int | np.random.Generator, alphabet: str = DEFAULT_ALPHABET, min_len: int = 3,
                   max_len: int = 8, exclude: Sequence[str] = ()) -> list:
    """`n` random strings over `alphabet` with lengths uniform in [min_len, max_len], none in `exclude`.

    Example:
      >>> random_strings(2, seed=0, min_len=3, max_len=3)  # doctest: +SKIP
      ['8ol', 'tk3']
    """
    _check_alphabet(alphabet)
    if not 1 <= min_len <= max_len:
        raise ValueError(f"need 1 <= min_len <= max_len; got min_len={min_len}, max_len={max_len}")
    rng = np.random.default_rng(seed)
    banned, out = set(exclude), []
    while len(out) < n:
        text = "".join(rng.choice(list(alphabet), size=int(rng.integers(min_len, max_len + 1))))
        if text not in banned:
            out.append(text)
    return out


def encode_texts(texts: Sequence[str], *, alphabet: str = DEFAULT_ALPHABET, max_len: int = 8):
    """Strings -> (labels (N, max_len) int32 with 0 padding, lengths (N,) int32); char alphabet[i] -> id i + 1."""
    index = {c: i + 1 for i, c in enumerate(alphabet)}
    labels = np.zeros((len(texts), max_len), np.int32)
    lengths = np.zeros((len(texts),), np.int32)
    for row, text in enumerate(texts):
        if len(text) > max_len:
            raise ValueError(f"encode_texts: {text!r} has {len(text)} characters, more than max_len={max_len}")
        for col, char in enumerate(text):
            if char not in index:
                raise ValueError(f"encode_texts: character {char!r} of {text!r} is not in alphabet={alphabet!r}")
            labels[row, col] = index[char]
        lengths[row] = len(text)
    return labels, lengths


def decode_ids(ids: Sequence[int], *, alphabet: str = DEFAULT_ALPHABET) -> str:
    """Class ids (blank = 0 skipped) -> string."""
    return "".join(alphabet[i - 1] for i in ids if i > 0)


def _background(rng: np.random.Generator, height: int, width: int) -> tuple[np.ndarray, float]:
    """A gray level, a linear gradient and Gaussian noise; returns (image, mean level)."""
    level = float(rng.uniform(0.0, 1.0))
    gy, gx = rng.uniform(-0.15, 0.15, size=2)
    ys = np.linspace(-0.5, 0.5, height, dtype=np.float32)[:, None]
    xs = np.linspace(-0.5, 0.5, width, dtype=np.float32)[None, :]
    image = level + gy * ys + gx * xs
    return image.astype(np.float32), level


def _ink_level(rng: np.random.Generator, background: float) -> float:
    """A text gray level at least _MIN_CONTRAST away from the background."""
    low, high = background - _MIN_CONTRAST, background + _MIN_CONTRAST
    choices = [(0.0, low)] if low > 0 else []
    choices += [(high, 1.0)] if high < 1 else []
    lo, hi = choices[int(rng.integers(len(choices)))]
    return float(rng.uniform(lo, hi))


def _finish(image: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    sigma = rng.uniform(0.01, 0.08)
    image = image + rng.normal(0.0, sigma, size=image.shape).astype(np.float32)
    return np.clip(image, 0.0, 1.0).astype(np.float32)


def _text_mask(text: str, size: int):
    """(mask (h, w) float32 in [0, 1], baseline row) of `text` drawn tight at font `size`."""
    from PIL import Image, ImageDraw

    font = _font(size)
    ascent, descent = font.getmetrics()
    width = int(np.ceil(font.getlength(text))) + 2
    canvas = Image.new("L", (width, ascent + descent))
    ImageDraw.Draw(canvas).text((1, ascent), text, font=font, fill=255, anchor="ls")
    return np.asarray(canvas, np.float32) / 255.0, ascent


def render_line(text: str, *, rng: np.random.Generator, height: int = 32, width: int = 128,
                font_sizes: tuple[int, int] = (16, 20)) -> np.ndarray:
    """One text line, left-aligned with jitter, on a noisy background: (height, width) float32.

    The font size is drawn from `font_sizes` (inclusive); the baseline and left margin move
    by a few pixels; a line wider than the image is squeezed horizontally to fit.

    Args:
      text: the string to draw.
      rng: the numpy Generator every random choice comes from.
      height, width: the image size.
      font_sizes: (smallest, largest) font size in pixels.

    Returns:
      (height, width) float32 in [0, 1].

    Example:
      >>> render_line("ab12", rng=np.random.default_rng(0)).shape
      (32, 128)
    """
    from PIL import Image

    mask, baseline = _text_mask(text, int(rng.integers(font_sizes[0], font_sizes[1] + 1)))
    left = int(rng.integers(0, 5))
    room = width - left - 1
    if mask.shape[1] > room:
        mask = np.asarray(Image.fromarray(mask).resize((room, mask.shape[0]), Image.BILINEAR), np.float32)
    top = (height - mask.shape[0]) // 2 + int(rng.integers(-2, 3))
    top = int(np.clip(top, 0, max(height - mask.shape[0], 0)))
    mask = mask[: height - top]
    image, level = _background(rng, height, width)
    ink = _ink_level(rng, level)
    region = image[top:top + mask.shape[0], left:left + mask.shape[1]]
    region[...] = region * (1 - mask) + ink * mask
    return _finish(image, rng)


def make_recognition_batch(n: int, *, seed: int | np.random.Generator, height: int = 32, width: int = 128,
                           alphabet: str = DEFAULT_ALPHABET, min_len: int = 3, max_len: int = 8,
                           exclude: Sequence[str] = ()) -> RecognitionBatch:
    """`n` rendered random strings (see `render_line`) with their CTC labels.

    Args:
      n: number of images.
      seed: an int or a numpy Generator; the same seed gives the same batch.
      height, width: image size (the recognizer's time steps are width // 4).
      alphabet, min_len, max_len: the strings (`random_strings`).
      exclude: strings never drawn (hold out a test set).

    Returns:
      A RecognitionBatch.

    Example:
      >>> b = make_recognition_batch(4, seed=0)
      >>> b.images.shape, b.labels.shape
      ((4, 1, 32, 128), (4, 8))
    """
    if height < 24 or width < 8 * max_len:
        raise ValueError(f"make_recognition_batch: images of {height}x{width} are too small for "
                         f"{max_len} characters; use height >= 24 and width >= {8 * max_len}")
    rng = np.random.default_rng(seed)
    texts = random_strings(n, seed=rng, alphabet=alphabet, min_len=min_len, max_len=max_len, exclude=exclude)
    images = np.stack([render_line(t, rng=rng, height=height, width=width) for t in texts])[:, None]
    labels, lengths = encode_texts(texts, alphabet=alphabet, max_len=max_len)
    return RecognitionBatch(images, labels, lengths, texts)


def _overlaps(box, boxes, margin: float) -> bool:
    return any(box[0] < b[2] + margin and b[0] < box[2] + margin and box[1] < b[3] + margin
               and b[1] < box[3] + margin for b in boxes)


def render_scene(rng: np.random.Generator, *, height: int = 128, width: int = 128, words: tuple[int, int] = (2, 4),
                 alphabet: str = DEFAULT_ALPHABET, min_len: int = 3, max_len: int = 8,
                 font_sizes: tuple[int, int] = (14, 20)):
    """A noisy image with 2-4 horizontal words at random places, apart from each other by >= 4 px.

    Args:
      rng: the numpy Generator every random choice comes from.
      height, width: the image size.
      words: (fewest, most) words; a word that finds no free place in 20 tries is left out.
      alphabet, min_len, max_len: the words (`random_strings`).
      font_sizes: (smallest, largest) font size in pixels.

    Returns:
      (image (height, width) float32, boxes (k, 4) float32 x0, y0, x1, y1 of each word's ink, texts).
    """
    image, level = _background(rng, height, width)
    boxes, texts = [], []
    for _ in range(int(rng.integers(words[0], words[1] + 1))):
        text = random_strings(1, seed=rng, alphabet=alphabet, min_len=min_len, max_len=max_len)[0]
        mask, _ = _text_mask(text, int(rng.integers(font_sizes[0], font_sizes[1] + 1)))
        ys, xs = np.nonzero(mask > 0.25)
        if len(xs) == 0 or mask.shape[1] + 4 > width or mask.shape[0] + 4 > height:
            continue
        ink = (xs.min(), ys.min(), xs.max() + 1, ys.max() + 1)
        for _attempt in range(20):
            left = int(rng.integers(2, width - mask.shape[1] - 1))
            top = int(rng.integers(2, height - mask.shape[0] - 1))
            box = (left + ink[0], top + ink[1], left + ink[2], top + ink[3])
            if not _overlaps(box, boxes, margin=4.0):
                break
        else:
            continue
        region = image[top:top + mask.shape[0], left:left + mask.shape[1]]
        region[...] = region * (1 - mask) + _ink_level(rng, level) * mask
        boxes.append(box)
        texts.append(text)
    return _finish(image, rng), np.asarray(boxes, np.float32).reshape(-1, 4), texts


def make_detection_batch(n: int, *, seed: int | np.random.Generator, height: int = 128, width: int = 128,
                         words: tuple[int, int] = (2, 4), alphabet: str = DEFAULT_ALPHABET) -> DetectionBatch:
    """`n` scenes of `render_scene`: images (n, 1, height, width) and each scene's word boxes.

    Example:
      >>> b = make_detection_batch(2, seed=0)
      >>> b.images.shape, b.boxes[0].shape[1]
      ((2, 1, 128, 128), 4)
    """
    if height < 32 or width < 96:
        raise ValueError(f"make_detection_batch: scenes of {height}x{width} are too small for a word; "
                         "use height >= 32 and width >= 96")
    rng = np.random.default_rng(seed)
    scenes = [render_scene(rng, height=height, width=width, words=words, alphabet=alphabet) for _ in range(n)]
    return DetectionBatch(np.stack([s[0] for s in scenes])[:, None], [s[1] for s in scenes], [s[2] for s in scenes])
