"""Corpus: functions and Layers with data-dependent Python control flow give the
same results compiled by pdx.jit (converted) as run eagerly, on inputs that
take different paths."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx
from pdx import nn

A = np.array


def _f32(*v):
    return jnp.asarray(A(v, dtype=np.float32))


# -- if / elif / else / ternary / bool ops -----------------------------------------------

def if_else_sign(x):
    if x.sum() > 0:
        y = x * 2
    else:
        y = -x
    return y


def elif_chain(x):
    m = x.mean()
    if m > 1:
        y = x - 1
    elif m > 0:
        y = x * 10
    elif m > -1:
        y = x + 100
    else:
        y = jnp.zeros_like(x)
    return y


def ternary(x):
    return x if x.mean() > 0 else x * 0.5


def nested_if(x):
    if x[0] > 0:
        if x[1] > 0:
            y = x + 1
        else:
            y = x - 1
    else:
        y = x * 3 if x[2] > 0 else x * 4
    return y


def early_return(x):
    if x.sum() < 0:
        return -x
    y = x * 3
    return y + 1


def early_return_chain(x):
    s = x.sum()
    if s > 2:
        return x - 2
    elif s > 0:
        return x * 0
    return x * 5


def bool_ops(x):
    if (x.sum() > 0 and x.max() < 5) or not x.min() > -1:
        return x + 1
    return x - 1


def chained_compare(x):
    if 0 < x.sum() < 3:
        return x * 2
    return x


def not_op(x):
    y = x
    if not x.sum() > 0:
        y = y * -1
    return y


def augassign_one_branch(x):
    y = x * 1.0
    if x[0] > x[1]:
        y += 1.0
    return y


def tuple_swap(x):
    a, b = x[0], x[1]
    if a > b:
        a, b = b, a
    return jnp.stack([a, b])


def dict_state(x):
    if x.sum() > 0:
        d = {"a": x, "b": x * 2}
    else:
        d = {"a": -x, "b": x}
    return d["a"] + d["b"]


def python_scalar_branch(x):
    if x.sum() > 0:
        scale = 2.0
    else:
        scale = 3
    return x * scale


def static_shape_condition(x):
    if x.shape[0] > 2:  # a Python value: stays a Python if
        return x[:2]
    return x


def clip_by_norm(g):
    norm = jnp.sqrt((g * g).sum())
    if norm > 1.0:
        g = g / norm
    return g


# -- while / for / break / continue ----------------------------------------------------

def while_halving(x):
    steps = 0
    while x.sum() > 1:
        x = x / 2
        steps += 1
    return x, steps


def while_counter(x, n):
    i = 0
    acc = jnp.zeros_like(x)
    while i < n:
        acc = acc + x * i
        i += 1
    return acc


def while_break(x):
    i = 0
    while True:
        if x[i % 3] > 2.5:
            break
        x = x + 1
        i += 1
    return x, i


def continue_in_while(x):
    i = 0
    s = jnp.float32(0)
    while i < 3:
        i += 1
        if x[i - 1] < 0:
            continue
        s = s + x[i - 1]
    return s


def collatz_steps(n):
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


def gcd(a, b):
    while b != 0:
        a, b = b, a % b
    return a


def for_range_traced(x, n):
    acc = jnp.zeros_like(x)
    for i in range(n):
        acc = acc + x * i
    return acc


def for_range_start_stop(x, lo, hi):
    acc = x * 0
    for i in range(lo, hi):
        acc = acc + i
    return acc


def for_over_rows(x):
    acc = jnp.zeros(x.shape[1:], x.dtype)
    for row in x:
        acc = acc + row ** 2
    return acc


def for_continue(x):
    s = jnp.float32(0)
    for i in range(4):
        if x[i] < 0:
            continue
        s = s + x[i]
    return s


def for_break_static(x):
    s = jnp.float32(0)
    for i in range(4):
        if x[i] > 2:
            break
        s = s + x[i]
    return s


def for_break_else(x):
    found = jnp.float32(-1)
    for row in x:
        if row.sum() > 3:
            found = row.sum()
            break
    else:
        found = found * 10
    return found


def break_in_scan(x):
    total = jnp.float32(0)
    for row in x:
        if total > 4:
            break
        total = total + row.sum()
    return total


def nested_if_in_loop(x):
    s = jnp.zeros(x.shape[1:], x.dtype)
    for row in x:
        if row.sum() > 0:
            s = s + row
        else:
            s = s - row
    return s


def nested_loops_break(x):
    count = 0
    for i in range(2):
        for row in x:
            if row[0] > i:
                break
            count += 1
    return count


def argmax_loop(x):
    best = x[0].sum()
    idx = 0
    for i in range(1, 4):
        if x[i].sum() > best:
            best = x[i].sum()
            idx = i
    return best, idx


def return_in_loop(x):
    for i in range(4):
        if x[i] > 1:
            return x[i] * 10
    return jnp.float32(-1)


def find_first_traced(x, n):
    for i in range(n):
        if x[i] > 1:
            return i
    return -1


def while_break_continue(x):
    i = 0
    s = jnp.float32(0)
    while i < 6:
        i += 1
        if x[i % 3] < 0:
            continue
        if s > 5:
            break
        s = s + x[i % 3]
    return s, i


def traced_range_break(x, n):
    s = jnp.float32(0)
    for i in range(n):
        if s > 3:
            break
        s = s + x[i]
    return s


def enumerate_rows(x):
    s = jnp.zeros(x.shape[1:], x.dtype)
    for i, row in enumerate(x):  # a Python iterator: unrolled, ifs converted
        if row.sum() > i:
            s = s + row
    return s


def nested_def(x):
    def pick(v):
        if v.sum() > 0:
            return v
        return v * -2

    return pick(x) + pick(x - 1)


# -- lists -------------------------------------------------------------------------------

def list_in_scan(x):
    h = jnp.zeros(x.shape[1:], x.dtype)
    outs = []
    for row in x:
        h = jnp.tanh(row + h)
        outs.append(h)
    return jnp.stack(outs)


def list_in_python_loop(x):
    outs = []
    for i in range(3):
        if x.sum() > i:
            outs.append(x * i)
        else:
            outs.append(x)
    return pdx.stack(outs)


# -- helpers, recursion, Layers -------------------------------------------------------------

def _helper_branch(v):
    if v.mean() > 0:
        return v * 2
    return v - 7


def calls_helper(x):
    return _helper_branch(x) + _helper_branch(-x)


def helper_in_loop(x):
    acc = jnp.zeros(x.shape[1:], x.dtype)
    for row in x:
        acc = acc + _helper_branch(row)
    return acc


def _recursive_depth(v, depth):
    if depth == 0:  # Python recursion on a Python value
        return v
    if v.sum() > 0:
        v = v - 1
    return _recursive_depth(v, depth - 1)


def recursion(x):
    return _recursive_depth(x, 3)


def beam_search_like(scores):
    # scores: (steps, beams); extend the best beam until its score is low or steps run out
    step = 0
    total = jnp.float32(0)
    finished = False
    while step < scores.shape[0] and not finished:
        best = scores[step].max()
        total = total + best
        if best < 0.5:
            finished = True
        step += 1
    return total, step


class Gate(nn.Layer):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(3, 2)
        self.b = nn.Linear(3, 2)

    def forward(self, x):
        if x.std() > 1:
            return self.a(x)
        return self.b(x) * 2


class Cell(nn.Layer):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(3, 4)
        self.hid = nn.Linear(4, 4)

    def forward(self, x_t, h):
        return pdx.tanh(self.inp(x_t) + self.hid(h))


class DynamicRNN(nn.Layer):
    def __init__(self):
        super().__init__()
        self.cell = Cell()

    def forward(self, xs):  # xs: (T, B, 3)
        h = pdx.zeros([xs.shape[1], 4])
        for x_t in xs:
            h = self.cell(x_t, h)
        return h


class LengthRNN(nn.Layer):
    def __init__(self):
        super().__init__()
        self.cell = Cell()

    def forward(self, xs, length):
        h = pdx.zeros([xs.shape[1], 4])
        for t in range(length):
            h = self.cell(xs[t], h)
        return h


class ResidualIfLarge(nn.Layer):
    def __init__(self):
        super().__init__()
        self.gate = Gate()
        self.proj = nn.Linear(2, 3)

    def _maybe_scale(self, y):
        if y.mean() > 0:
            y = y * 0.5
        return y

    def forward(self, x):
        y = self._maybe_scale(self.gate(x))
        if self.training:  # Python value: plain Python
            y = y + 0
        return self.proj(y) + x


def _make_layer(cls):
    pdx.seed(0)
    return cls()


rng0 = np.random.default_rng(0)
R = lambda *s: jnp.asarray(rng0.normal(size=s).astype(np.float32))  # noqa: E731

CORPUS = [
    (if_else_sign, [(_f32(1, 2),), (_f32(-1, -2),)]),
    (elif_chain, [(_f32(2, 3),), (_f32(0.5, 0.2),), (_f32(-0.5, 0),), (_f32(-5, -5),)]),
    (ternary, [(_f32(1, 2),), (_f32(-1, -2),)]),
    (nested_if, [(_f32(1, 1, 1),), (_f32(1, -1, 1),), (_f32(-1, 0, 1),), (_f32(-1, 0, -1),)]),
    (early_return, [(_f32(1, 2),), (_f32(-3, 1),)]),
    (early_return_chain, [(_f32(2, 3),), (_f32(0.5, 0.5),), (_f32(-1, -1),)]),
    (bool_ops, [(_f32(1, 2),), (_f32(1, 9),), (_f32(-3, 1),), (_f32(-0.5, 0.2),)]),
    (chained_compare, [(_f32(1, 1),), (_f32(2, 2),), (_f32(-1, 0),)]),
    (not_op, [(_f32(1, 2),), (_f32(-1, -2),)]),
    (augassign_one_branch, [(_f32(2, 1),), (_f32(1, 2),)]),
    (tuple_swap, [(_f32(2, 1),), (_f32(1, 2),)]),
    (dict_state, [(_f32(2, 1),), (_f32(-1, -2),)]),
    (python_scalar_branch, [(_f32(2, 1),), (_f32(-1, -2),)]),
    (static_shape_condition, [(_f32(2, 1, 3),), (_f32(-1, -2, 0),)]),
    (clip_by_norm, [(_f32(3, 4),), (_f32(0.1, 0.2),)]),
    (while_halving, [(_f32(3, 4),), (_f32(0.1, 0.2),)]),
    (while_counter, [(_f32(1, 2), jnp.int32(3)), (_f32(1, 2), jnp.int32(0))]),
    (while_break, [(_f32(0, 1, 2),), (_f32(3, 0, 0),), (_f32(-2, -1, 0),)]),
    (continue_in_while, [(_f32(1, -2, 3),), (_f32(-1, -2, -3),)]),
    (collatz_steps, [(jnp.int32(6),), (jnp.int32(1),), (jnp.int32(27),)]),
    (gcd, [(jnp.int32(12), jnp.int32(18)), (jnp.int32(7), jnp.int32(5))]),
    (for_range_traced, [(_f32(1, 2), jnp.int32(4)), (_f32(1, 2), jnp.int32(0))]),
    (for_range_start_stop, [(_f32(1, 2), jnp.int32(2), jnp.int32(5)), (_f32(1, 2), jnp.int32(5), jnp.int32(2))]),
    (for_over_rows, [(R(4, 3),), (R(4, 3),)]),
    (for_continue, [(_f32(1, -2, 3, 4),), (_f32(-1, -1, -1, 5),)]),
    (for_break_static, [(_f32(1, 1, 3, 1),), (_f32(0, 0, 0, 0),), (_f32(5, 1, 1, 1),)]),
    (for_break_else, [(jnp.asarray(A([[1, 1], [2, 2], [0, 0]], np.float32)),),
                      (jnp.asarray(A([[1, 1], [1, 1], [0, 0]], np.float32)),)]),
    (break_in_scan, [(jnp.asarray(A([[1, 1], [2, 2], [3, 3]], np.float32)),),
                     (jnp.asarray(A([[0, 1], [0, 1], [0, 1]], np.float32)),)]),
    (nested_if_in_loop, [(R(4, 3),), (R(4, 3),)]),
    (nested_loops_break, [(jnp.asarray(A([[0.5], [2.0], [-1.0]], np.float32)),),
                          (jnp.asarray(A([[-1.0], [-2.0], [-3.0]], np.float32)),)]),
    (argmax_loop, [(R(4, 2),), (R(4, 2),), (jnp.asarray(A([[9, 9], [0, 0], [1, 1], [2, 2]], np.float32)),)]),
    (return_in_loop, [(_f32(0, 2, 3, 0),), (_f32(0, 0, 0, 0),), (_f32(5, 0, 0, 0),)]),
    (find_first_traced, [(_f32(0, 0, 3, 0), jnp.int32(4)), (_f32(0, 0, 3, 0), jnp.int32(2))]),
    (list_in_scan, [(R(5, 3),), (R(5, 3),)]),
    (list_in_python_loop, [(_f32(1, 1),), (_f32(0.5, 0.5),), (_f32(-1, -1),)]),
    (calls_helper, [(_f32(1, 2),), (_f32(-1, 0.5),)]),
    (helper_in_loop, [(R(3, 2),), (R(3, 2),)]),
    (recursion, [(_f32(1, 2),), (_f32(-1, 0.5),)]),
    (while_break_continue, [(_f32(1, 2, 3),), (_f32(-1, 2, -3),), (_f32(-1, -1, -1),)]),
    (traced_range_break, [(_f32(1, 2, 3, 4), jnp.int32(4)), (_f32(1, 1, 0, 0), jnp.int32(3))]),
    (enumerate_rows, [(R(3, 2),), (R(3, 2) + 2,)]),
    (nested_def, [(_f32(1, 2),), (_f32(-1, 0.5),)]),
    (beam_search_like, [(jnp.asarray(A([[0.9, 0.1], [0.8, 0.7], [0.2, 0.4], [0.9, 0.9]], np.float32)),),
                        (jnp.asarray(A([[0.9, 0.1], [0.8, 0.7], [0.6, 0.9], [0.9, 0.9]], np.float32)),)]),
]

LAYERS = [
    (Gate, [(R(2, 3) * 3,), (R(2, 3) * 0.1,)]),
    (DynamicRNN, [(R(4, 2, 3),), (R(4, 2, 3),)]),
    (LengthRNN, [(R(4, 2, 3), jnp.int32(4)), (R(4, 2, 3), jnp.int32(1))]),
    (ResidualIfLarge, [(R(2, 3) * 3,), (R(2, 3) * 0.1,)]),
]


def _close(a, b):
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("fn,inputs", CORPUS, ids=[f.__name__ for f, _ in CORPUS])
def test_function_matches_eager(fn, inputs):
    compiled = pdx.jit(fn)
    for args in inputs:
        _close(compiled(*args), fn(*args))
    assert compiled.cache_size() == 1  # different values, different paths: one trace


@pytest.mark.parametrize("cls,inputs", LAYERS, ids=[c.__name__ for c, _ in LAYERS])
def test_layer_matches_eager(cls, inputs):
    layer = _make_layer(cls)
    eager = [layer(*args) for args in inputs]
    pdx.jit(layer)
    for args, want in zip(inputs, eager):
        _close(layer(*args), want)


def test_lambda_entry_point():
    scale = pdx.jit(lambda x: x * 2 if x.sum() > 0 else x / 2)
    np.testing.assert_allclose(scale(_f32(1, 2)), [2, 4])
    np.testing.assert_allclose(scale(_f32(-1, -2)), [-0.5, -1])


def test_paths_differ():
    """The corpus inputs really exercise different paths (guards against a
    corpus whose inputs all take the same branch)."""
    a, b = if_else_sign(_f32(1, 2)), if_else_sign(_f32(-1, -2))
    np.testing.assert_allclose(a, [2, 4])
    np.testing.assert_allclose(b, [1, 2])
    assert int(pdx.jit(collatz_steps)(jnp.int32(27))) == 111


def test_corpus_size():
    assert len(CORPUS) + len(LAYERS) >= 40
