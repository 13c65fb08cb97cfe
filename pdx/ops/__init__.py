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
from pdx.ops._linalg import matrix_norm  # pdx.linalg's (Paddle keeps both in paddle.tensor.linalg beside norm)
from pdx.ops._linalg import vector_norm
from pdx.ops._linalg import pinv
from pdx.ops._linalg import qr
from pdx.ops._linalg import solve
from pdx.ops._linalg import svd
from pdx.ops._elementwise import acos
from pdx.ops._elementwise import acosh
from pdx.ops._elementwise import asin
from pdx.ops._elementwise import asinh
from pdx.ops._elementwise import atan
from pdx.ops._elementwise import atanh
from pdx.ops._elementwise import cosh
from pdx.ops._elementwise import deg2rad
from pdx.ops._elementwise import expm1
from pdx.ops._elementwise import frac
from pdx.ops._elementwise import frexp
from pdx.ops._elementwise import isneginf
from pdx.ops._elementwise import isposinf
from pdx.ops._elementwise import isreal
from pdx.ops._elementwise import log10
from pdx.ops._elementwise import logit
from pdx.ops._elementwise import neg
from pdx.ops._elementwise import negative
from pdx.ops._elementwise import positive
from pdx.ops._elementwise import rad2deg
from pdx.ops._elementwise import reciprocal
from pdx.ops._elementwise import sgn
from pdx.ops._elementwise import sigmoid
from pdx.ops._elementwise import signbit
from pdx.ops._elementwise import sinc
from pdx.ops._elementwise import sinh
from pdx.ops._elementwise import softmax
from pdx.ops._elementwise import square
from pdx.ops._elementwise import stanh
from pdx.ops._elementwise import tan
from pdx.ops._elementwise import trunc
from pdx.ops._binary import atan2
from pdx.ops._binary import bitwise_and
from pdx.ops._binary import bitwise_invert
from pdx.ops._binary import bitwise_left_shift
from pdx.ops._binary import bitwise_not
from pdx.ops._binary import bitwise_or
from pdx.ops._binary import bitwise_right_shift
from pdx.ops._binary import bitwise_xor
from pdx.ops._binary import clamp
from pdx.ops._binary import copysign
from pdx.ops._binary import div
from pdx.ops._binary import eq
from pdx.ops._binary import equal_all
from pdx.ops._binary import floor_mod
from pdx.ops._binary import fmax
from pdx.ops._binary import fmin
from pdx.ops._binary import gcd
from pdx.ops._binary import ge
from pdx.ops._binary import greater
from pdx.ops._binary import gt
from pdx.ops._binary import heaviside
from pdx.ops._binary import isin
from pdx.ops._binary import hypot
from pdx.ops._binary import isclose
from pdx.ops._binary import lcm
from pdx.ops._binary import ldexp
from pdx.ops._binary import le
from pdx.ops._binary import less
from pdx.ops._binary import logaddexp
from pdx.ops._binary import lt
from pdx.ops._binary import mul
from pdx.ops._binary import ne
from pdx.ops._binary import nextafter
from pdx.ops._binary import sub
from pdx.ops._binary import true_divide
from pdx.ops._special import digamma
from pdx.ops._special import erfinv
from pdx.ops._special import gammainc
from pdx.ops._special import gammaincc
from pdx.ops._special import gammaln
from pdx.ops._special import i0
from pdx.ops._special import i0e
from pdx.ops._special import i1
from pdx.ops._special import i1e
from pdx.ops._special import lgamma
from pdx.ops._special import multigammaln
from pdx.ops._special import polygamma
from pdx.ops._stack_split import atleast_1d
from pdx.ops._stack_split import atleast_2d
from pdx.ops._stack_split import atleast_3d
from pdx.ops._stack_split import column_stack
from pdx.ops._stack_split import dsplit
from pdx.ops._stack_split import dstack
from pdx.ops._stack_split import hsplit
from pdx.ops._stack_split import hstack
from pdx.ops._stack_split import row_stack
from pdx.ops._stack_split import tensor_split
from pdx.ops._stack_split import unstack
from pdx.ops._stack_split import vsplit
from pdx.ops._stack_split import vstack
from pdx.ops._views import as_strided
from pdx.ops._views import broadcast_shape
from pdx.ops._views import broadcast_shapes
from pdx.ops._views import broadcast_tensors
from pdx.ops._views import cat
from pdx.ops._views import concatenate
from pdx.ops._views import crop
from pdx.ops._views import matrix_transpose
from pdx.ops._views import moveaxis
from pdx.ops._views import narrow
from pdx.ops._views import permute
from pdx.ops._views import ravel
from pdx.ops._views import reverse
from pdx.ops._views import rot90
from pdx.ops._views import swapaxes
from pdx.ops._views import swapdims
from pdx.ops._views import t
from pdx.ops._views import take_along_dim
from pdx.ops._views import unflatten
from pdx.ops._views import unfold
from pdx.ops._views import view
from pdx.ops._views import view_as
from pdx.ops._stat import count_nonzero
from pdx.ops._stat import kthvalue
from pdx.ops._stat import median
from pdx.ops._stat import mode
from pdx.ops._stat import nanmean
from pdx.ops._stat import nanmedian
from pdx.ops._stat import nanquantile
from pdx.ops._stat import nansum
from pdx.ops._stat import quantile
from pdx.ops._scan import bincount
from pdx.ops._scan import bucketize
from pdx.ops._scan import cummax
from pdx.ops._scan import cummin
from pdx.ops._scan import cumulative_trapezoid
from pdx.ops._scan import diff
from pdx.ops._scan import histogram
from pdx.ops._scan import histogram_bin_edges
from pdx.ops._scan import histogramdd
from pdx.ops._scan import logcumsumexp
from pdx.ops._scan import msort
from pdx.ops._scan import reduce_as
from pdx.ops._scan import trapezoid
from pdx.ops._scan import unique_consecutive
from pdx.ops._scatter import argwhere
from pdx.ops._scatter import diagonal_scatter
from pdx.ops._scatter import index_add
from pdx.ops._scatter import index_fill
from pdx.ops._scatter import index_put
from pdx.ops._scatter import index_sample
from pdx.ops._scatter import masked_scatter
from pdx.ops._scatter import multiplex
from pdx.ops._scatter import scatter_add
from pdx.ops._scatter import scatter_nd
from pdx.ops._scatter import scatter_reduce
from pdx.ops._scatter import select_scatter
from pdx.ops._scatter import shard_index
from pdx.ops._scatter import slice_scatter
from pdx.ops._scatter import take
from pdx.ops._products import addmm
from pdx.ops._products import baddbmm
from pdx.ops._products import block_diag
from pdx.ops._products import cartesian_prod
from pdx.ops._products import cdist
from pdx.ops._products import combinations
from pdx.ops._products import cross
from pdx.ops._products import diag_embed
from pdx.ops._products import diagflat
from pdx.ops._products import diagonal
from pdx.ops._products import dist
from pdx.ops._products import ger
from pdx.ops._products import inner
from pdx.ops._products import mv
from pdx.ops._products import pdist
from pdx.ops._products import renorm
from pdx.ops._products import tensordot
from pdx.ops._products import trace
from pdx.ops._products import tril_indices
from pdx.ops._products import triu_indices
from pdx.ops._products import vander
from pdx.ops._products import vecdot
from pdx.ops._complex import angle
from pdx.ops._complex import as_complex
from pdx.ops._complex import as_real
from pdx.ops._complex import complex
from pdx.ops._complex import conj
from pdx.ops._complex import finfo
from pdx.ops._complex import iinfo
from pdx.ops._complex import imag
from pdx.ops._complex import is_complex
from pdx.ops._complex import is_empty
from pdx.ops._complex import is_floating_point
from pdx.ops._complex import is_integer
from pdx.ops._complex import polar
from pdx.ops._complex import rank
from pdx.ops._complex import real
from pdx.ops._complex import tolist
from pdx.ops._complex import view_as_complex
from pdx.ops._complex import view_as_real
from pdx.ops._copies_ranges import add_n
from pdx.ops._copies_ranges import as_tensor
from pdx.ops._copies_ranges import asarray
from pdx.ops._copies_ranges import assign
from pdx.ops._copies_ranges import bartlett_window
from pdx.ops._copies_ranges import blackman_window
from pdx.ops._copies_ranges import clone
from pdx.ops._copies_ranges import create_parameter
from pdx.ops._copies_ranges import empty_like
from pdx.ops._copies_ranges import from_dlpack
from pdx.ops._copies_ranges import from_numpy
from pdx.ops._copies_ranges import hamming_window
from pdx.ops._copies_ranges import hann_window
from pdx.ops._copies_ranges import increment
from pdx.ops._copies_ranges import kaiser_window
from pdx.ops._copies_ranges import logspace
from pdx.ops._copies_ranges import range
from pdx.ops._copies_ranges import to_dlpack
from pdx.ops._random_samplers import binomial
from pdx.ops._random_samplers import log_normal
from pdx.ops._random_samplers import poisson
from pdx.ops._random_samplers import rand_like
from pdx.ops._random_samplers import randint_like
from pdx.ops._random_samplers import randn_like
from pdx.ops._random_samplers import randperm
from pdx.ops._random_samplers import standard_gamma
from pdx.ops._random_samplers import standard_normal
from pdx.ops._eigvalsh import eigvalsh

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

# Paddle 3.x's further top-level ops (math, special functions, statistics, scatter, complex, ...).
__all__ = sorted(__all__ + [
    "acos", "acosh", "add_n", "addmm", "angle", "argwhere", "as_complex", "as_real", "as_strided",
    "as_tensor", "asarray", "asin", "asinh", "assign", "atan", "atan2", "atanh", "atleast_1d",
    "atleast_2d", "atleast_3d", "baddbmm", "bartlett_window", "bincount", "binomial", "bitwise_and",
    "bitwise_invert", "bitwise_left_shift", "bitwise_not", "bitwise_or", "bitwise_right_shift",
    "bitwise_xor", "blackman_window", "block_diag", "broadcast_shape", "broadcast_shapes",
    "broadcast_tensors", "bucketize", "cartesian_prod", "cat", "cdist", "clamp", "clone",
    "column_stack", "combinations", "complex", "concatenate", "conj", "copysign", "cosh",
    "count_nonzero", "create_parameter", "crop", "cross", "cummax", "cummin",
    "cumulative_trapezoid", "deg2rad", "diag_embed", "diagflat", "diagonal", "diagonal_scatter",
    "diff", "digamma", "dist", "div", "dsplit", "dstack", "eigvalsh", "empty_like", "eq",
    "equal_all", "erfinv", "expm1", "finfo", "floor_mod", "fmax", "fmin", "frac", "frexp",
    "from_dlpack", "from_numpy", "gammainc", "gammaincc", "gammaln", "gcd", "ge", "ger", "greater",
    "gt", "hamming_window", "hann_window", "heaviside", "histogram", "histogram_bin_edges",
    "histogramdd", "hsplit", "hstack", "hypot", "i0", "i0e", "i1", "i1e", "iinfo", "imag",
    "increment", "index_add", "index_fill", "index_put", "index_sample", "inner", "is_complex",
    "is_empty", "is_floating_point", "isin", "is_integer", "isclose", "isneginf", "isposinf", "isreal",
    "kaiser_window", "kthvalue", "lcm", "ldexp", "le", "less", "lgamma", "log10", "log_normal",
    "logaddexp", "logcumsumexp", "logit", "logspace", "lt", "masked_scatter", "matrix_transpose",
    "median", "mode", "moveaxis", "msort", "mul", "multigammaln", "multiplex", "mv", "nanmean",
    "nanmedian", "nanquantile", "nansum", "narrow", "ne", "neg", "negative", "nextafter", "pdist",
    "permute", "poisson", "polar", "polygamma", "positive", "quantile", "rad2deg", "rand_like",
    "randint_like", "randn_like", "randperm", "range", "rank", "ravel", "real", "reciprocal",
    "reduce_as", "renorm", "reverse", "rot90", "row_stack", "scatter_add", "scatter_nd",
    "scatter_reduce", "select_scatter", "sgn", "shard_index", "sigmoid", "signbit", "sinc", "sinh",
    "slice_scatter", "softmax", "square", "standard_gamma", "standard_normal", "stanh", "sub",
    "swapaxes", "swapdims", "t", "take", "take_along_dim", "tan", "tensor_split", "tensordot",
    "to_dlpack", "tolist", "trace", "trapezoid", "tril_indices", "triu_indices", "true_divide",
    "trunc", "unflatten", "unfold", "unique_consecutive", "unstack", "vander", "vecdot", "view", "view_as",
    "view_as_complex", "view_as_real", "vsplit", "vstack",
])
