"""Behaviours Paddle's own API tests (PaddleTest `framework/api/paddlebase`) found different, each
checked against the installed paddle: the result where paddle gives one, the exception class where
paddle raises.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import pdx

RNG = np.random.default_rng(0)


def _arr(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


A23, A5, A53, A35 = _arr(2, 3), _arr(5), _arr(5, 3), _arr(3, 5)


# tensordot's axes forms (x shape, y shape, axes): a flat list names the same axes of x and y, the
# shorter of two lists takes the longer one's tail, only the first two lists count, size-1 dims
# contract with any size.
TENSORDOT = [
    ((2, 3, 4, 2), (2, 3, 8, 7), [0, 1]),
    ((2, 3, 4, 2), (8, 7, 4, 2), [2, 3]),
    ((2, 3, 4, 2), (8, 7, 4, 2), ([2, 3],)),
    ((2, 7, 4, 2), (8, 7, 4, 2), [(1, 2, 3)]),
    ((2, 7, 4, 2), (7, 7, 4, 2), [(1, 2, 3), (0, 2, 3)]),
    ((2, 7, 4, 2), (7, 7, 4, 2), ([1, 2, 3], [0, 2, 3], [4, 5, 6])),
    ((4, 3, 5), (4, 1, 8), [0, 1]),
    ((2, 4, 3, 5), (2, 4, 1, 5), [0, 2]),
    ((4, 2, 3, 5, 4), (2, 4, 3, 5, 8), [[0, 1, 2, 3], [1, 0]]),
    ((3, 4), (4, 5), [[-1], [0]]),
    ((3, 4), (4, 5), 1),
    ((3, 4), (3, 4), 2),
    ((3, 4), (5, 6), 0),
]


def test_tensordot_axes_forms_match_paddle(paddle):
    failures = []
    for xs, ys, axes in TENSORDOT:
        x, y = _arr(*xs), _arr(*ys)
        want = paddle.tensordot(paddle.to_tensor(x), paddle.to_tensor(y), axes=axes).numpy()
        got = np.asarray(pdx.tensordot(pdx.to_tensor(x), pdx.to_tensor(y), axes=axes))
        if got.shape != want.shape or not np.allclose(got, want, rtol=1e-4, atol=1e-4):
            failures.append(f"{xs} {ys} axes={axes}: pdx {got.shape}, paddle {want.shape}")
    assert not failures, "\n".join(failures)


def test_tensordot_mismatched_dims_raise():
    with pytest.raises(ValueError, match="tensordot"):
        pdx.tensordot(pdx.ones([2, 3]), pdx.ones([4, 3]), axes=[0, 1])


# (what, call(m, t)) where paddle returns a value: pdx must return the same value and dtype.
VALUES = [
    ("argmax int32", lambda m, t: m.argmax(t(np.array([[1.0, 5.0], [7.0, 2.0]])), axis=1, dtype="int32")),
    ("argmin int64", lambda m, t: m.argmin(t(np.array([[1.0, 5.0], [7.0, 2.0]])), axis=0, dtype="int64")),
    ("eye 1-element float tensors", lambda m, t: m.eye(t(np.array([5.0])), t(np.array([3.0])))),
    ("eye 0-D float tensor", lambda m, t: m.eye(t(np.array(4.7)))),
    ("eye 1-element int tensor", lambda m, t: m.eye(t(np.array([2])), 3, dtype="int32")),
    ("eye zero rows", lambda m, t: m.eye(0, 3)),
    ("eye zero columns", lambda m, t: m.eye(2, 0)),
    ("eye numpy int", lambda m, t: m.eye(np.int64(3))),
    ("index_select negative index", lambda m, t: m.index_select(t(A23), t(np.array([0, -1])), axis=1)),
    ("addmm 1-D input", lambda m, t: m.addmm(t(A5), t(A53), t(A35))),
] + [
    # float -> a narrow integer: truncate, then wrap (-1.2 -> uint8 255, 300.7 -> int8 44)
    (f"cast {src} -> {dst}", lambda m, t, src=src, dst=dst:
        m.cast(t(np.array([-1.2, -2.0, 0.0, 4.5, 300.7, -300.2, 70000.5]).astype(src)), dst))
    for src in ("float32", "float64") for dst in ("uint8", "int8", "int16", "int32", "bool")
]

# (what, call(m, t)) where paddle raises: pdx must raise an instance of paddle's class.
ERRORS = [
    ("argmax dtype None", lambda m, t: m.argmax(t(_arr(3, 3)), dtype=None)),
    ("argmax dtype float32", lambda m, t: m.argmax(t(_arr(3, 3)), dtype="float32")),
    ("argmax dtype np.float32", lambda m, t: m.argmax(t(_arr(3, 3)), dtype=np.float32)),
    ("argmax dtype int16", lambda m, t: m.argmax(t(_arr(3, 3)), dtype="int16")),
    ("argmin dtype None", lambda m, t: m.argmin(t(_arr(3, 3)), axis=0, dtype=None)),
    ("argmin dtype float64", lambda m, t: m.argmin(t(_arr(3, 3)), dtype="float64")),
    ("argmin dtype bool", lambda m, t: m.argmin(t(_arr(3, 3)), dtype="bool")),
    ("eye float rows", lambda m, t: m.eye(3.0)),
    ("eye float columns", lambda m, t: m.eye(2, 3.5)),
    ("eye negative rows", lambda m, t: m.eye(-3)),
    ("eye negative columns", lambda m, t: m.eye(2, -1)),
    ("index_select index out of range", lambda m, t: m.index_select(t(_arr(2, 3)), t(np.array([0, 5])), axis=1)),
    ("index_select index below -n", lambda m, t: m.index_select(t(_arr(2, 3)), t(np.array([-4])), axis=1)),
    ("addmm 4-D input", lambda m, t: m.addmm(t(_arr(5, 5, 5, 5)), t(_arr(5, 3)), t(_arr(3, 5)))),
    ("addmm 0-D input", lambda m, t: m.addmm(t(np.float32(1.0)), t(_arr(5, 3)), t(_arr(3, 5)))),
    # an axis out of range: IndexError for these ops, ValueError for the rest
    ("gather axis", lambda m, t: m.gather(t(A23), t(np.array([0, 1])), axis=2)),
    ("index_select axis", lambda m, t: m.index_select(t(A23), t(np.array([0, 1])), axis=2)),
    ("cumsum axis", lambda m, t: m.cumsum(t(A23), axis=3)),
    ("index_add axis", lambda m, t: m.index_add(t(A23), t(np.array([0, 1])), 3, t(A23))),
    ("repeat_interleave axis", lambda m, t: m.repeat_interleave(t(A23), 2, axis=3)),
    ("cumprod dim", lambda m, t: m.cumprod(t(A23), dim=3)),
    ("flip axis", lambda m, t: m.flip(t(A23), axis=3)),
]


def test_values_match_paddle(paddle):
    failures = []
    for what, call in VALUES:
        want = call(paddle, paddle.to_tensor).numpy()
        got = np.asarray(call(pdx, pdx.to_tensor))
        # pdx's 64-bit types are 32-bit without x64 (pdx's documented narrowing)
        if got.shape != want.shape or got.dtype != jax.dtypes.canonicalize_dtype(want.dtype) \
                or not np.allclose(got, want, rtol=1e-6, atol=1e-6):
            failures.append(f"{what}: pdx {got.dtype}{got.shape}, paddle {want.dtype}{want.shape}")
    assert not failures, "\n".join(failures)


def test_error_classes_match_paddle(paddle):
    failures = []
    for what, call in ERRORS:
        try:
            call(paddle, paddle.to_tensor)
        except Exception as e:  # noqa: BLE001  (paddle's class is what we compare with)
            want = type(e)
        else:
            failures.append(f"{what}: paddle raises nothing (fix the case)")
            continue
        try:
            call(pdx, pdx.to_tensor)
        except want as e:
            if "pdx." not in str(e):
                failures.append(f"{what}: pdx's message does not name the op: {e}")
        except Exception as e:  # noqa: BLE001
            failures.append(f"{what}: pdx raises {type(e).__name__}, paddle {want.__name__}: {e}")
        else:
            failures.append(f"{what}: pdx raises nothing, paddle {want.__name__}")
    assert not failures, "\n".join(failures)


def test_error_categories_match_paddle(paddle):
    """Paddle's category, `(OutOfRange)` or `(InvalidArgument)`, is in pdx's message too."""
    failures = []
    for what, call in ERRORS:
        try:
            call(paddle, paddle.to_tensor)
        except Exception as e:  # noqa: BLE001
            want = next((c for c in ("(OutOfRange)", "(InvalidArgument)", "(InvalidType)") if c in str(e)), None)
        if want is None:
            continue
        try:
            call(pdx, pdx.to_tensor)
        except Exception as e:  # noqa: BLE001
            if want not in str(e):
                failures.append(f"{what}: paddle says {want}, pdx: {e}")
    assert not failures, "\n".join(failures)


def test_index_dtype_messages_name_the_argument():
    with pytest.raises(ValueError, match=r"`dtype` must be 'int32' or 'int64'; got dtype=None"):
        pdx.argmax(pdx.ones([2]), dtype=None)
    with pytest.raises(TypeError, match=r"`num_rows` must be a non-negative int; got num_rows=-3"):
        pdx.eye(-3)


def test_index_checks_read_a_closed_over_index_under_jit():
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    index = pdx.to_tensor(np.array([2, 0]))
    got = jax.jit(lambda v: (pdx.index_select(v, index, axis=1), pdx.take(v, index)))(pdx.to_tensor(x))
    np.testing.assert_array_equal(np.asarray(got[0]), x[:, [2, 0]])
    np.testing.assert_array_equal(np.asarray(got[1]), x.reshape(-1)[[2, 0]])
    with pytest.raises(ValueError, match=r"index_select: `index` values must lie in \[-3, 3\)"):
        pdx.index_select(pdx.to_tensor(x), index + 5, axis=1)
