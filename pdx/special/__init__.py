"""pdx.special: Paddle's `paddle.special` namespace (logsumexp, softmax, expm1).

`logsumexp` and `expm1` are the top-level `pdx.logsumexp` / `pdx.expm1`;
`softmax` takes the PyTorch-style `(input, dim, dtype)` arguments of
`paddle.special.softmax`. See README.md in this folder.
"""

from pdx.ops import expm1
from pdx.ops import logsumexp
from pdx.special._special import softmax

__all__ = [
    "expm1",
    "logsumexp",
    "softmax",
]
