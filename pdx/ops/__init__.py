"""pdx.ops: pure tensor ops with Paddle 3.x names, arguments and defaults.

Every name here is also re-exported at the top level (`pdx.concat`, `pdx.matmul`, ...).
See README.md in this folder for the groups, the eager-only ops and the differences from Paddle.
"""

from pdx.ops._creation import arange
from pdx.ops._creation import diag
from pdx.ops._creation import empty
from pdx.ops._creation import eye
from pdx.ops._creation import full
from pdx.ops._creation import full_like
from pdx.ops._creation import linspace
from pdx.ops._creation import meshgrid
from pdx.ops._creation import ones
from pdx.ops._creation import ones_like
from pdx.ops._creation import to_tensor
from pdx.ops._creation import tril
from pdx.ops._creation import triu
from pdx.ops._creation import zeros
from pdx.ops._creation import zeros_like
from pdx.ops._random_ops import bernoulli
from pdx.ops._random_ops import multinomial
from pdx.ops._random_ops import normal
from pdx.ops._random_ops import rand
from pdx.ops._random_ops import randint
from pdx.ops._random_ops import randn
from pdx.ops._random_ops import uniform
from pdx.ops._math import abs
from pdx.ops._math import add
from pdx.ops._math import amax
from pdx.ops._math import amin
from pdx.ops._math import bmm
from pdx.ops._math import ceil
from pdx.ops._math import clip
from pdx.ops._math import cos
from pdx.ops._math import cumprod
from pdx.ops._math import cumsum
from pdx.ops._math import divide
from pdx.ops._math import dot
from pdx.ops._math import einsum
from pdx.ops._math import erf
from pdx.ops._math import exp
from pdx.ops._math import floor
from pdx.ops._math import floor_divide
from pdx.ops._math import isfinite
from pdx.ops._math import isinf
from pdx.ops._math import isnan
from pdx.ops._math import kron
from pdx.ops._math import lerp
from pdx.ops._math import log
from pdx.ops._math import log1p
from pdx.ops._math import log2
from pdx.ops._math import logsumexp
from pdx.ops._math import matmul
from pdx.ops._math import max
from pdx.ops._math import maximum
from pdx.ops._math import mean
from pdx.ops._math import min
from pdx.ops._math import minimum
from pdx.ops._math import mm
from pdx.ops._math import mod
from pdx.ops._math import multiply
from pdx.ops._math import nan_to_num
from pdx.ops._math import outer
from pdx.ops._math import pow
from pdx.ops._math import prod
from pdx.ops._math import remainder
from pdx.ops._math import round
from pdx.ops._math import rsqrt
from pdx.ops._math import scale
from pdx.ops._math import sign
from pdx.ops._math import sin
from pdx.ops._math import sqrt
from pdx.ops._math import std
from pdx.ops._math import subtract
from pdx.ops._math import sum
from pdx.ops._math import tanh
from pdx.ops._math import var
from pdx.ops._manipulation import broadcast_to
from pdx.ops._manipulation import cast
from pdx.ops._manipulation import chunk
from pdx.ops._manipulation import concat
from pdx.ops._manipulation import expand
from pdx.ops._manipulation import expand_as
from pdx.ops._manipulation import flatten
from pdx.ops._manipulation import flip
from pdx.ops._manipulation import gather
from pdx.ops._manipulation import gather_nd
from pdx.ops._manipulation import index_select
from pdx.ops._manipulation import masked_fill
from pdx.ops._manipulation import masked_select
from pdx.ops._manipulation import pad
from pdx.ops._manipulation import put_along_axis
from pdx.ops._manipulation import repeat_interleave
from pdx.ops._manipulation import reshape
from pdx.ops._manipulation import roll
from pdx.ops._manipulation import scatter
from pdx.ops._manipulation import scatter_nd_add
from pdx.ops._manipulation import slice
from pdx.ops._manipulation import split
from pdx.ops._manipulation import squeeze
from pdx.ops._manipulation import stack
from pdx.ops._manipulation import strided_slice
from pdx.ops._manipulation import take_along_axis
from pdx.ops._manipulation import tile
from pdx.ops._manipulation import transpose
from pdx.ops._manipulation import unbind
from pdx.ops._manipulation import unsqueeze
from pdx.ops._manipulation import where
from pdx.ops._logic import all
from pdx.ops._logic import allclose
from pdx.ops._logic import any
from pdx.ops._logic import argmax
from pdx.ops._logic import argmin
from pdx.ops._logic import argsort
from pdx.ops._logic import equal
from pdx.ops._logic import greater_equal
from pdx.ops._logic import greater_than
from pdx.ops._logic import is_tensor
from pdx.ops._logic import less_equal
from pdx.ops._logic import less_than
from pdx.ops._logic import logical_and
from pdx.ops._logic import logical_not
from pdx.ops._logic import logical_or
from pdx.ops._logic import logical_xor
from pdx.ops._logic import nonzero
from pdx.ops._logic import not_equal
from pdx.ops._logic import numel
from pdx.ops._logic import searchsorted
from pdx.ops._logic import shape
from pdx.ops._logic import sort
from pdx.ops._logic import topk
from pdx.ops._logic import unique
from pdx.ops._linalg import cholesky
from pdx.ops._linalg import det
from pdx.ops._linalg import inverse
from pdx.ops._linalg import matrix_power
from pdx.ops._linalg import norm
from pdx.ops._linalg import pinv
from pdx.ops._linalg import qr
from pdx.ops._linalg import solve
from pdx.ops._linalg import svd

__all__ = [
    "abs",
    "add",
    "all",
    "allclose",
    "amax",
    "amin",
    "any",
    "arange",
    "argmax",
    "argmin",
    "argsort",
    "bernoulli",
    "bmm",
    "broadcast_to",
    "cast",
    "ceil",
    "cholesky",
    "chunk",
    "clip",
    "concat",
    "cos",
    "cumprod",
    "cumsum",
    "det",
    "diag",
    "divide",
    "dot",
    "einsum",
    "empty",
    "equal",
    "erf",
    "exp",
    "expand",
    "expand_as",
    "eye",
    "flatten",
    "flip",
    "floor",
    "floor_divide",
    "full",
    "full_like",
    "gather",
    "gather_nd",
    "greater_equal",
    "greater_than",
    "index_select",
    "inverse",
    "is_tensor",
    "isfinite",
    "isinf",
    "isnan",
    "kron",
    "lerp",
    "less_equal",
    "less_than",
    "linspace",
    "log",
    "log1p",
    "log2",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "logsumexp",
    "masked_fill",
    "masked_select",
    "matmul",
    "matrix_power",
    "max",
    "maximum",
    "mean",
    "meshgrid",
    "min",
    "minimum",
    "mm",
    "mod",
    "multinomial",
    "multiply",
    "nan_to_num",
    "nonzero",
    "norm",
    "normal",
    "not_equal",
    "numel",
    "ones",
    "ones_like",
    "outer",
    "pad",
    "pinv",
    "pow",
    "prod",
    "put_along_axis",
    "qr",
    "rand",
    "randint",
    "randn",
    "remainder",
    "repeat_interleave",
    "reshape",
    "roll",
    "round",
    "rsqrt",
    "scale",
    "scatter",
    "scatter_nd_add",
    "searchsorted",
    "shape",
    "sign",
    "sin",
    "slice",
    "solve",
    "sort",
    "split",
    "sqrt",
    "squeeze",
    "stack",
    "std",
    "strided_slice",
    "subtract",
    "sum",
    "svd",
    "take_along_axis",
    "tanh",
    "tile",
    "to_tensor",
    "topk",
    "transpose",
    "tril",
    "triu",
    "unbind",
    "uniform",
    "unique",
    "unsqueeze",
    "var",
    "where",
    "zeros",
    "zeros_like",
]
