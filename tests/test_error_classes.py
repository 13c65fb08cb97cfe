"""Bad input raises the exception class Paddle raises (pdx's message, Paddle's class).

Each case runs once in paddle and once in pdx; pdx's error must be an instance of
paddle's class (pdx's shared errors in pdx/_args.py are two classes at once where
Paddle and Python disagree, e.g. `ArgumentError` is a TypeError and a ValueError)
and its message must name the op (`pdx.<op>: ...`).
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx

X = np.random.default_rng(0).random((2, 3)).astype(np.float32)
F = pdx.nn.functional

# (what, call(m, t)): m is paddle or pdx, t makes a tensor from numpy.
CASES = [
    # axis out of range
    ("sum axis", lambda m, t: m.sum(t(X), axis=5)),
    ("mean axis", lambda m, t: m.mean(t(X), axis=-3)),
    ("max axis", lambda m, t: m.max(t(X), axis=2)),
    ("argmax axis", lambda m, t: m.argmax(t(X), axis=2)),
    ("concat axis", lambda m, t: m.concat([t(X), t(X)], axis=3)),
    ("stack axis", lambda m, t: m.stack([t(X), t(X)], axis=4)),
    ("unsqueeze axis", lambda m, t: m.unsqueeze(t(X), 5)),
    ("squeeze axis", lambda m, t: m.squeeze(t(X), 5)),
    ("flatten start_axis", lambda m, t: m.flatten(t(X), 3)),
    ("flatten start > stop", lambda m, t: m.flatten(t(X), 1, 0)),
    ("transpose perm", lambda m, t: m.transpose(t(X), [0, 2])),
    ("split axis", lambda m, t: m.split(t(X), 2, axis=3)),
    ("gather axis", lambda m, t: m.gather(t(X), t(np.array([0])), axis=3)),
    ("softmax axis", lambda m, t: m.nn.functional.softmax(t(X), axis=3)),
    ("cumsum axis", lambda m, t: m.cumsum(t(X), axis=3)),
    ("flip axis", lambda m, t: m.flip(t(X), [3])),
    ("roll axis", lambda m, t: m.roll(t(X), 1, axis=3)),
    ("topk axis", lambda m, t: m.topk(t(X), 1, axis=3)),
    ("sort axis", lambda m, t: m.sort(t(X), axis=3)),
    # bad dtype
    ("cast dtype", lambda m, t: m.cast(t(X), "floatxx")),
    ("to_tensor dtype", lambda m, t: m.to_tensor([1.0], dtype="floatxx")),
    ("zeros dtype", lambda m, t: m.zeros([2], dtype="floatxx")),
    ("ones dtype object", lambda m, t: m.ones([2], dtype=3.5)),
    ("arange dtype", lambda m, t: m.arange(3, dtype="foo")),
    ("gather index dtype", lambda m, t: m.gather(t(X), t(np.array([0.5], np.float32)))),
    ("index_select index dtype", lambda m, t: m.index_select(t(X), t(np.array([0.5], np.float32)))),
    ("scatter index dtype", lambda m, t: m.scatter(t(X), t(np.array([0.5], np.float32)), t(X[:1]))),
    # bad shape
    ("reshape size", lambda m, t: m.reshape(t(X), [4, 2])),
    ("reshape size, -1", lambda m, t: m.reshape(t(X), [4, -1])),
    ("reshape two -1", lambda m, t: m.reshape(t(X), [-1, -1])),
    ("reshape -2", lambda m, t: m.reshape(t(X), [-2, 3])),
    ("reshape shape str", lambda m, t: m.reshape(t(X), "ab")),
    ("reshape float dim", lambda m, t: m.reshape(t(X), [2.5, 3])),
    ("x.reshape size", lambda m, t: t(X).reshape([4, 2])),
    ("expand", lambda m, t: m.expand(t(X), [3, 3])),
    ("broadcast_to", lambda m, t: m.broadcast_to(t(X), [3, 3])),
    ("zeros shape str", lambda m, t: m.zeros("ab")),
    ("zeros float dim", lambda m, t: m.zeros([2.5])),
    ("full negative dim", lambda m, t: m.full([-2, 3], 1.0)),
    ("matmul shapes", lambda m, t: m.matmul(t(X), t(X))),
    ("add broadcast", lambda m, t: m.add(t(X), t(np.ones((4,), np.float32)))),
    ("concat shapes", lambda m, t: m.concat([t(X), t(np.ones((2, 2), np.float32))], axis=0)),
    ("split uneven", lambda m, t: m.split(t(X), 2, axis=1)),
    ("chunk uneven", lambda m, t: m.chunk(t(X), 2, axis=1)),
    ("linear shapes", lambda m, t: m.nn.functional.linear(t(X), t(np.ones((4, 2), np.float32)))),
    ("where shapes", lambda m, t: m.where(t(X) > 0, t(X), t(np.ones((4,), np.float32)))),
    ("inverse non-square", lambda m, t: m.linalg.inv(t(X))),
    ("diag 3-D", lambda m, t: m.diag(t(np.ones((2, 2, 2), np.float32)))),
    # wrong type argument
    ("add str", lambda m, t: m.add(t(X), "a")),
    ("abs str", lambda m, t: m.abs("a")),
    ("exp None", lambda m, t: m.exp(None)),
    ("matmul None", lambda m, t: m.matmul(t(X), None)),
    ("sum axis str", lambda m, t: m.sum(t(X), axis="a")),
    ("sum axis float", lambda m, t: m.sum(t(X), axis=1.5)),
    ("unsqueeze axis str", lambda m, t: m.unsqueeze(t(X), "a")),
    ("concat a tensor", lambda m, t: m.concat(t(X), axis=0)),
    ("to_tensor object", lambda m, t: m.to_tensor(object())),
    ("to_tensor str", lambda m, t: m.to_tensor("abc")),
    ("tile str", lambda m, t: m.tile(t(X), "a")),
    ("hardshrink threshold str", lambda m, t: m.nn.functional.hardshrink(t(X), threshold="1")),
    ("hardtanh max str", lambda m, t: m.nn.functional.hardtanh(t(X), max="-3.3", min=3.3)),
    ("leaky_relu slope str", lambda m, t: m.nn.functional.leaky_relu(t(X), "a")),
    ("diag offset float", lambda m, t: m.diag(t(X[0]), offset=2.5)),
]
CATEGORIES = ("(InvalidArgument)", "(InvalidType)")


def test_error_classes_match_paddle(paddle):
    failures = []
    for what, call in CASES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                call(paddle, paddle.to_tensor)
            except Exception as e:  # noqa: BLE001  (paddle's class is what we compare with)
                want = type(e)
            else:
                failures.append(f"{what}: paddle raises nothing (fix the case)")
                continue
        # Paddle's own classes are builtins or subclasses of them: compare with the builtin.
        want = next(c for c in want.__mro__ if c.__module__ == "builtins")
        try:
            call(pdx, jnp.asarray)
        except Exception as e:  # noqa: BLE001  (collected, reported together)
            if not isinstance(e, want):
                failures.append(f"{what}: pdx raises {type(e).__name__}, paddle {want.__name__}: {e}")
            elif not str(e).startswith("pdx."):
                failures.append(f"{what}: the message should name the op: {str(e)[:200]}")
        else:
            failures.append(f"{what}: pdx raises nothing, paddle {want.__name__}")
    assert not failures, "\n".join(failures)


def test_error_messages_carry_paddles_category(paddle):
    """Where paddle's message names its category (`(InvalidArgument) ...`), pdx's names the same
    one (after the teaching message): ported code and Paddle's own tests look for it."""
    failures, checked = [], 0
    for what, call in CASES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                call(paddle, paddle.to_tensor)
            except Exception as e:  # noqa: BLE001
                want = next((c for c in CATEGORIES if c in str(e)), None)
        if want is None:
            continue
        checked += 1
        try:
            call(pdx, jnp.asarray)
        except Exception as e:  # noqa: BLE001
            if want not in str(e):
                failures.append(f"{what}: paddle says {want}, pdx: {str(e)[:160]}")
    assert checked >= 20, checked
    assert not failures, "\n".join(failures)


def test_shared_errors_are_both_classes():
    """What JAX code catches keeps working: x.reshape's error is still a TypeError for JAX,
    an axis error still an IndexError for numpy-style code."""
    x = jnp.ones((2, 3))
    with pytest.raises(TypeError, match=r"pdx\.reshape: cannot reshape x\.shape=\(2, 3\)"):
        x.reshape(4, 2)
    with pytest.raises(IndexError, match="out of range"):
        pdx.sum(x, axis=3)
    with pytest.raises(ValueError, match="must be a tensor"):
        pdx.exp("a")
    with pytest.raises(TypeError, match="must be a tensor"):
        jax.jit(lambda a: pdx.add(a, "a"))(x)
