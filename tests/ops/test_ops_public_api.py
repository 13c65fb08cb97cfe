"""The public surface of pdx.ops: every name exported, reachable as pdx.<name>, documented,
and called like its Paddle counterpart (same positional parameter names, order and defaults)."""

import inspect

import pytest

import pdx
import pdx.ops
from pdx.ops import (  # noqa: F401  (importing every public name is part of the test)
    abs, add, all, allclose, amax, amin, any, arange, argmax, argmin, argsort, bernoulli, bmm, broadcast_to,
    cast, ceil, cholesky, chunk, clip, concat, cos, cumprod, cumsum, det, diag, divide, dot, einsum, empty,
    equal, erf, exp, expand, expand_as, eye, flatten, flip, floor, floor_divide, full, full_like, gather,
    gather_nd, greater_equal, greater_than, index_select, inverse, is_tensor, isfinite, isinf, isnan, kron,
    lerp, less_equal, less_than, linspace, log, log1p, log2, logical_and, logical_not, logical_or,
    logical_xor, logsumexp, masked_fill, masked_select, matmul, matrix_power, max, maximum, mean, meshgrid,
    min, minimum, mm, mod, multinomial, multiply, nan_to_num, nonzero, norm, normal, not_equal, numel, ones,
    ones_like, outer, pad, pinv, pow, prod, put_along_axis, qr, rand, randint, randn, remainder,
    repeat_interleave, reshape, roll, round, rsqrt, scale, scatter, scatter_nd_add, searchsorted, shape,
    sign, sin, slice, solve, sort, split, sqrt, squeeze, stack, std, strided_slice, subtract, sum, svd,
    take_along_axis, tanh, tile, to_tensor, topk, transpose, tril, triu, unbind, uniform, unique, unsqueeze,
    var, where, zeros, zeros_like,
)
from pdx.ops import (  # noqa: F401  (the further top-level ops)
    acos, acosh, add_n, addmm, angle, argwhere, as_complex, as_real, as_strided, as_tensor, asarray, asin,
    asinh, assign, atan, atan2, atanh, atleast_1d, atleast_2d, atleast_3d, baddbmm, bartlett_window,
    bincount, binomial, bitwise_and, bitwise_invert, bitwise_left_shift, bitwise_not, bitwise_or,
    bitwise_right_shift, bitwise_xor, blackman_window, block_diag, broadcast_shape, broadcast_shapes,
    broadcast_tensors, bucketize, cartesian_prod, cat, cdist, clamp, clone, column_stack, combinations,
    complex, concatenate, conj, copysign, cosh, count_nonzero, create_parameter, crop, cross, cummax,
    cummin, cumulative_trapezoid, deg2rad, diag_embed, diagflat, diagonal, diagonal_scatter, diff, digamma,
    dist, div, dsplit, dstack, eigvalsh, empty_like, eq, equal_all, erfinv, expm1, finfo, floor_mod, fmax,
    fmin, frac, frexp, from_dlpack, from_numpy, gammainc, gammaincc, gammaln, gcd, ge, ger, greater, gt,
    hamming_window, hann_window, heaviside, histogram, histogram_bin_edges, histogramdd, hsplit, hstack,
    hypot, i0, i0e, i1, i1e, iinfo, imag, increment, index_add, index_fill, index_put, index_sample, inner,
    is_complex, is_empty, is_floating_point, isin, is_integer, isclose, isneginf, isposinf, isreal, kaiser_window,
    kthvalue, lcm, ldexp, le, less, lgamma, log10, log_normal, logaddexp, logcumsumexp, logit, logspace, lt,
    masked_scatter, matrix_transpose, median, mode, moveaxis, msort, mul, multigammaln, multiplex, mv,
    nanmean, nanmedian, nanquantile, nansum, narrow, ne, neg, negative, nextafter, pdist, permute, poisson,
    polar, polygamma, positive, quantile, rad2deg, rand_like, randint_like, randn_like, randperm, range,
    rank, ravel, real, reciprocal, reduce_as, renorm, reverse, rot90, row_stack, scatter_add, scatter_nd,
    scatter_reduce, select_scatter, sgn, shard_index, sigmoid, signbit, sinc, sinh, slice_scatter, softmax,
    square, standard_gamma, standard_normal, stanh, sub, swapaxes, swapdims, t, take, take_along_dim, tan,
    tensor_split, tensordot, to_dlpack, tolist, trace, trapezoid, tril_indices, triu_indices, true_divide,
    trunc, unflatten, unfold, unique_consecutive, unstack, vander, vecdot, view, view_as, view_as_complex,
    view_as_real, vsplit,
    vstack,
)

PUBLIC = list(pdx.ops.__all__)

# Paddle keyword-only or positional extras pdx leaves out: `out=` (no in-place writes in JAX) and
# norm's `dtype` (cast the input instead).
PADDLE_ONLY = {"out", "device", "requires_grad", "pin_memory"}
PADDLE_ONLY_PER_OP = {"norm": {"dtype"}}
# pdx's keyword-only extensions: explicit RNG keys and fixed output sizes for jit.
PDX_KEYWORD_ONLY = {"key", "size", "fill_value", "name", "dtype", "correction",
                    "alpha", "rounding_mode", "include_self", "copy"}


def test_all_is_sorted_and_unique():
    assert PUBLIC == sorted(set(PUBLIC))


def test_every_public_name_is_imported_above():
    assert set(PUBLIC) == {n for n in globals() if n in PUBLIC}


@pytest.mark.parametrize("name", PUBLIC)
def test_reachable_at_top_level_and_documented(name):
    fn = getattr(pdx.ops, name)
    assert getattr(pdx, name) is fn, f"pdx.{name} is not pdx.ops.{name}"
    assert name in pdx.__all__
    doc = inspect.getdoc(fn)
    assert doc and doc.splitlines()[0].strip(), f"pdx.{name} has no one-line summary"
    for section in ("Returns:", "Example:", ">>>"):
        assert section in doc, f"pdx.{name}'s docstring lacks {section!r}"
    if inspect.signature(fn).parameters:
        assert "Args:" in doc, f"pdx.{name}'s docstring lacks 'Args:'"


def _paddle_counterpart(paddle, name):
    if name == "pad":
        return paddle.nn.functional.pad
    return getattr(paddle, name, None) or getattr(paddle.linalg, name)


def _positional(fn, drop=frozenset()):
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [(n, p.default) for n, p in inspect.signature(fn).parameters.items()
            if p.kind in kinds and n not in drop]


@pytest.mark.parametrize("name", [n for n in PUBLIC if n not in {"meshgrid", "einsum"}])
def test_signature_matches_paddle(paddle, name):
    ours = getattr(pdx, name)
    theirs = _paddle_counterpart(paddle, name)
    drop = PADDLE_ONLY | PADDLE_ONLY_PER_OP.get(name, set())
    assert [n for n, _ in _positional(ours)] == [n for n, _ in _positional(theirs, drop)]
    for (n, ours_default), (_, their_default) in zip(_positional(ours), _positional(theirs, drop)):
        assert ours_default == their_default or (ours_default is their_default), f"default of {n}"
    kw_only = {n for n, p in inspect.signature(ours).parameters.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    assert kw_only <= PDX_KEYWORD_ONLY, f"unexpected keyword-only arguments {kw_only - PDX_KEYWORD_ONLY}"


def test_random_ops_take_a_keyword_only_key():
    for fn in (rand, randn, randint, uniform, normal, bernoulli, multinomial):
        param = inspect.signature(fn).parameters["key"]
        assert param.kind is inspect.Parameter.KEYWORD_ONLY and param.default is None
