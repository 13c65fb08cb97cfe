"""Elementwise unary/binary, bitwise and special-function ops vs the installed paddle."""

import jax.numpy as jnp
import numpy as np
import pytest
from extra_testutil import check_forward, check_grads

import pdx


def f32(*shape, low=-2.0, high=2.0):
    return lambda rng: rng.uniform(low, high, shape).astype(np.float32)


def pos(*shape, low=0.2, high=3.0):
    return f32(*shape, low=low, high=high)


def i32(*shape, low=-9, high=10):
    return lambda rng: rng.integers(low, high, shape).astype(np.int32)


def const(values, dtype=np.float32):
    return lambda rng: np.asarray(values, dtype)


S = (3, 4, 5)

FORWARD = [
    ("acos", lambda m, x: m.acos(x), [f32(*S, low=-0.99, high=0.99)]),
    ("asin", lambda m, x: m.asin(x), [f32(*S, low=-0.99, high=0.99)]),
    ("atan", lambda m, x: m.atan(x), [f32(*S)]),
    ("acosh", lambda m, x: m.acosh(x), [pos(*S, low=1.01, high=4)]),
    ("asinh", lambda m, x: m.asinh(x), [f32(*S)]),
    ("atanh", lambda m, x: m.atanh(x), [f32(*S, low=-0.9, high=0.9)]),
    ("tan", lambda m, x: m.tan(x), [f32(*S, low=-1.2, high=1.2)]),
    ("sinh", lambda m, x: m.sinh(x), [f32(*S)]),
    ("cosh", lambda m, x: m.cosh(x), [f32(*S)]),
    ("tan_int", lambda m, x: m.tan(x), [i32(5, low=-1, high=2)]),
    ("expm1", lambda m, x: m.expm1(x), [f32(*S)]),
    ("log10", lambda m, x: m.log10(x), [pos(*S)]),
    ("reciprocal", lambda m, x: m.reciprocal(x), [pos(*S)]),
    ("reciprocal_int", lambda m, x: m.reciprocal(x), [i32(6, low=1, high=5)]),
    ("sigmoid", lambda m, x: m.sigmoid(x), [f32(*S, low=-8, high=8)]),
    ("deg2rad", lambda m, x: m.deg2rad(x), [f32(*S, low=-360, high=360)]),
    ("deg2rad_int", lambda m, x: m.deg2rad(x), [i32(6)]),
    ("rad2deg", lambda m, x: m.rad2deg(x), [f32(*S)]),
    ("sinc", lambda m, x: m.sinc(x), [f32(*S)]),
    ("square", lambda m, x: m.square(x), [f32(*S)]),
    ("square_int", lambda m, x: m.square(x), [i32(3, 4)]),
    ("neg", lambda m, x: m.neg(x), [i32(3, 4)]),
    ("negative", lambda m, x: m.negative(x), [f32(*S)]),
    ("positive", lambda m, x: m.positive(x), [i32(4)]),
    ("trunc", lambda m, x: m.trunc(x), [f32(*S, low=-5, high=5)]),
    ("trunc_int", lambda m, x: m.trunc(x), [i32(4)]),
    ("frac", lambda m, x: m.frac(x), [f32(*S, low=-5, high=5)]),
    ("frac_int", lambda m, x: m.frac(x), [i32(4)]),
    ("signbit", lambda m, x: m.signbit(x), [const([-1.0, 0.0, -0.0, 2.0, -np.inf])]),
    ("isneginf", lambda m, x: m.isneginf(x), [const([-np.inf, np.inf, np.nan, 1.0])]),
    ("isposinf", lambda m, x: m.isposinf(x), [const([-np.inf, np.inf, np.nan, 1.0])]),
    ("isreal", lambda m, x: m.isreal(x), [f32(3, 2)]),
    ("isreal_complex", lambda m, x: m.isreal(x), [const([1 + 0j, 1 + 1j], np.complex64)]),
    ("sgn", lambda m, x: m.sgn(x), [f32(*S)]),
    ("sgn_complex", lambda m, x: m.sgn(x), [const([3 + 4j, 0j, -2j], np.complex64)]),
    ("stanh", lambda m, x: m.stanh(x, 0.5, 2.0), [f32(*S)]),
    ("logit", lambda m, x: m.logit(x), [f32(*S, low=0.05, high=0.95)]),
    ("logit_eps", lambda m, x: m.logit(x, eps=0.1), [f32(*S, low=0.0, high=1.0)]),
    ("frexp", lambda m, x: m.frexp(x), [f32(*S, low=-50, high=50)]),
    ("softmax_default_dim", lambda m, x: m.softmax(x), [f32(2, 3, 4)]),
    ("softmax_dim", lambda m, x: m.softmax(x, dim=-1), [f32(3, 5)]),
    ("softmax_2d_default", lambda m, x: m.softmax(x), [f32(3, 5)]),
    # binary
    ("sub", lambda m, x, y: m.sub(x, y), [f32(*S), f32(5)]),
    ("sub_alpha", lambda m, x, y: m.sub(x, y, alpha=2), [f32(*S), f32(*S)]),
    ("mul", lambda m, x, y: m.mul(x, y), [i32(3, 4), i32(4)]),
    ("div", lambda m, x, y: m.div(x, y), [f32(*S), pos(*S)]),
    ("div_trunc", lambda m, x, y: m.div(x, y, rounding_mode="trunc"), [f32(*S, low=-9, high=9), pos(5)]),
    ("div_floor", lambda m, x, y: m.div(x, y, rounding_mode="floor"), [f32(*S, low=-9, high=9), pos(5)]),
    ("div_trunc_int", lambda m, x, y: m.div(x, y, rounding_mode="trunc"), [i32(4, 5), i32(5, low=1, high=4)]),
    ("div_floor_int", lambda m, x, y: m.div(x, y, rounding_mode="floor"), [i32(4, 5), i32(5, low=1, high=4)]),
    ("true_divide", lambda m, x, y: m.true_divide(x, y), [i32(4), i32(4, low=1, high=5)]),
    ("floor_mod", lambda m, x, y: m.floor_mod(x, y), [i32(3, 4), i32(4, low=1, high=5)]),
    ("eq", lambda m, x, y: m.eq(x, y), [i32(3, 4, low=0, high=3), i32(4, low=0, high=3)]),
    ("ne", lambda m, x, y: m.ne(x, y), [i32(3, 4, low=0, high=3), i32(3, 4, low=0, high=3)]),
    ("lt", lambda m, x, y: m.lt(x, y), [f32(*S), f32(5)]),
    ("le", lambda m, x, y: m.le(x, y), [i32(3, 4, low=0, high=3), i32(4, low=0, high=3)]),
    ("gt", lambda m, x, y: m.gt(x, y), [f32(*S), f32(*S)]),
    ("ge", lambda m, x, y: m.ge(x, y), [i32(4, low=0, high=3), i32(4, low=0, high=3)]),
    ("less", lambda m, x, y: m.less(x, y), [f32(3, 4), f32(3, 4)]),
    ("greater", lambda m, x, y: m.greater(x, y), [f32(3, 4), f32(4)]),
    ("clamp", lambda m, x: m.clamp(x, -0.5, 0.7), [f32(*S)]),
    ("equal_all", lambda m, x, y: m.equal_all(x, y), [i32(3, low=0, high=2), i32(3, low=0, high=2)]),
    ("equal_all_same", lambda m, x: m.equal_all(x, x), [f32(3, 4)]),
    ("isclose", lambda m, x, y: m.isclose(x, y, rtol=0.1, atol=0.05), [f32(*S), f32(*S)]),
    ("isclose_nan", lambda m, x, y: m.isclose(x, y, equal_nan=True),
     [const([np.nan, 1.0, 2.0]), const([np.nan, 1.0, 2.5])]),
    ("atan2", lambda m, x, y: m.atan2(x, y), [f32(*S), f32(*S)]),
    ("hypot", lambda m, x, y: m.hypot(x, y), [f32(*S), f32(5)]),
    ("logaddexp", lambda m, x, y: m.logaddexp(x, y), [f32(*S, low=-30, high=30), f32(*S)]),
    ("fmax", lambda m, x, y: m.fmax(x, y), [const([1.0, np.nan, 3.0, np.nan]), const([2.0, 1.0, np.nan, np.nan])]),
    ("fmin", lambda m, x, y: m.fmin(x, y), [const([1.0, np.nan, 3.0, np.nan]), const([2.0, 1.0, np.nan, np.nan])]),
    ("fmax_int", lambda m, x, y: m.fmax(x, y), [i32(3, 4), i32(3, 4)]),
    ("copysign", lambda m, x, y: m.copysign(x, y), [f32(*S), f32(*S)]),
    ("nextafter", lambda m, x, y: m.nextafter(x, y), [f32(*S), f32(*S)]),
    ("ldexp", lambda m, x, y: m.ldexp(x, y), [f32(*S), i32(5, low=-3, high=4)]),
    ("heaviside", lambda m, x, y: m.heaviside(x, y), [const([-1.0, 0.0, 2.0, 0.0]), const([0.5, 0.25, 0.1, 7.0])]),
    ("gcd", lambda m, x, y: m.gcd(x, y), [i32(3, 4, low=-30, high=30), i32(4, low=0, high=30)]),
    ("lcm", lambda m, x, y: m.lcm(x, y), [i32(3, 4, low=-12, high=12), i32(3, 4, low=0, high=12)]),
    ("bitwise_and", lambda m, x, y: m.bitwise_and(x, y), [i32(3, 4, low=-99, high=99), i32(4, low=0, high=99)]),
    ("bitwise_or", lambda m, x, y: m.bitwise_or(x, y), [i32(3, 4, low=-99, high=99), i32(3, 4)]),
    ("bitwise_xor", lambda m, x, y: m.bitwise_xor(x, y), [i32(3, 4, low=-99, high=99), i32(3, 4)]),
    ("bitwise_and_bool", lambda m, x, y: m.bitwise_and(x, y), [const([True, True, False], np.bool_),
                                                               const([True, False, False], np.bool_)]),
    ("bitwise_not", lambda m, x: m.bitwise_not(x), [i32(3, 4, low=-99, high=99)]),
    ("bitwise_invert", lambda m, x: m.bitwise_invert(x), [const([True, False], np.bool_)]),
    ("left_shift", lambda m, x, y: m.bitwise_left_shift(x, y), [i32(3, 4, low=-99, high=99), i32(4, low=0, high=5)]),
    ("right_shift", lambda m, x, y: m.bitwise_right_shift(x, y), [i32(3, 4, low=-99, high=99), i32(4, low=0, high=5)]),
    ("right_shift_logical", lambda m, x, y: m.bitwise_right_shift(x, y, is_arithmetic=False),
     [i32(3, 4, low=-99, high=99), i32(4, low=0, high=5)]),
    # special functions
    ("lgamma", lambda m, x: m.lgamma(x), [f32(*S, low=-3.5, high=6)]),
    ("gammaln", lambda m, x: m.gammaln(x), [pos(*S)]),
    ("digamma", lambda m, x: m.digamma(x), [pos(*S)]),
    ("polygamma1", lambda m, x: m.polygamma(x, 1), [pos(*S, low=0.5)]),
    ("polygamma2", lambda m, x: m.polygamma(x, 2), [pos(3, 4, low=0.5)]),
    ("erfinv", lambda m, x: m.erfinv(x), [f32(*S, low=-0.95, high=0.95)]),
    ("i0", lambda m, x: m.i0(x), [f32(*S, low=-5, high=5)]),
    ("i0e", lambda m, x: m.i0e(x), [f32(*S, low=-5, high=5)]),
    ("i1", lambda m, x: m.i1(x), [f32(*S, low=-5, high=5)]),
    ("i1e", lambda m, x: m.i1e(x), [f32(*S, low=-5, high=5)]),
    ("gammainc", lambda m, x, y: m.gammainc(x, y), [pos(*S), pos(*S)]),
    ("gammaincc", lambda m, x, y: m.gammaincc(x, y), [pos(*S), pos(*S)]),  # paddle mis-broadcasts y
    ("multigammaln", lambda m, x: m.multigammaln(x, 3), [pos(*S, low=1.2, high=5)]),
]

# Paddle computes these in float32 with its own series; agreement is to a few ulps more.
LOOSE = {"lgamma", "gammaln", "digamma", "polygamma1", "polygamma2", "i0", "i0e", "i1", "i1e", "gammainc",
         "gammaincc", "multigammaln", "erfinv", "sinc", "tan", "cosh", "sinh", "expm1"}


def test_forward_matches_paddle(paddle, rng):
    check_forward(paddle, rng, FORWARD, loose=LOOSE)


GRADS = [
    ("asin", lambda m, x: m.asin(x), [f32(3, 4, low=-0.9, high=0.9)], (0,)),
    ("acosh", lambda m, x: m.acosh(x), [pos(3, 4, low=1.2, high=3)], (0,)),
    ("tan", lambda m, x: m.tan(x), [f32(3, 4, low=-1, high=1)], (0,)),
    ("sigmoid", lambda m, x: m.sigmoid(x), [f32(3, 4)], (0,)),
    ("reciprocal", lambda m, x: m.reciprocal(x), [pos(3, 4)], (0,)),
    ("logit", lambda m, x: m.logit(x), [f32(3, 4, low=0.1, high=0.9)], (0,)),
    ("stanh", lambda m, x: m.stanh(x), [f32(3, 4)], (0,)),
    ("sub_alpha", lambda m, x, y: m.sub(x, y, alpha=3), [f32(3, 4), f32(4)], (0, 1)),
    ("atan2", lambda m, x, y: m.atan2(x, y), [f32(3, 4), pos(3, 4)], (0, 1)),
    ("hypot", lambda m, x, y: m.hypot(x, y), [pos(3, 4), pos(3, 4)], (0, 1)),
    ("logaddexp", lambda m, x, y: m.logaddexp(x, y), [f32(3, 4), f32(3, 4)], (0, 1)),
    ("lgamma", lambda m, x: m.lgamma(x), [pos(3, 4, low=0.5)], (0,)),
    ("digamma", lambda m, x: m.digamma(x), [pos(3, 4, low=0.5)], (0,)),
    ("erfinv", lambda m, x: m.erfinv(x), [f32(3, 4, low=-0.8, high=0.8)], (0,)),
    ("i0", lambda m, x: m.i0(x), [f32(3, 4)], (0,)),
    ("softmax", lambda m, x: m.softmax(x, dim=1), [f32(3, 4)], (0,)),
]


def test_grads_match_paddle(paddle, rng):
    check_grads(paddle, rng, GRADS)


def test_bad_input_names_the_argument():
    x = jnp.ones([3])
    with pytest.raises(ValueError, match="rounding_mode"):
        pdx.div(x, x, rounding_mode="round")
    with pytest.raises(TypeError, match="`x` must be an integer"):
        pdx.gcd(x, x)
    with pytest.raises(TypeError, match="`x` must be an integer or bool"):
        pdx.bitwise_not(x)
    with pytest.raises(ValueError, match="cannot be broadcast"):
        pdx.hypot(jnp.ones([3]), jnp.ones([4]))
    with pytest.raises(ValueError, match="`n`=-1"):
        pdx.polygamma(x, -1)
    with pytest.raises(ValueError, match="`p`=0"):
        pdx.multigammaln(x, 0)
    with pytest.raises(ValueError, match="`eps`"):
        pdx.logit(x, eps=0.7)
