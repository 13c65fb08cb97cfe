"""Every conversion error names the user's file and line, shows the code and
says what to change."""

import inspect

import jax.numpy as jnp
import pytest

import pdx
from pdx.jit._dy2static import Dy2StaticError


def _where(fn, marker):
    """'File "<this file>", line N' for the line of `fn` holding `marker`."""
    lines, first = inspect.getsourcelines(fn)
    for i, text in enumerate(lines):
        if marker in text:
            return f'File "{__file__}", line {first + i}', text.strip()
    raise AssertionError(marker)


def _check(exc_info, fn, marker, *phrases):
    message = str(exc_info.value)
    where, code = _where(fn, marker)
    assert where in message, message
    assert code in message, message
    for p in phrases:
        assert p in message, message


def shape_mismatch(x):
    if x.sum() > 0:  # MARK
        y = x
    else:
        y = jnp.concatenate([x, x])
    return y


def dtype_mismatch(x):
    if x.sum() > 0:  # MARK
        y = x
    else:
        y = x.astype(jnp.int32)
    return y


def structure_mismatch(x):
    if x.sum() > 0:  # MARK
        y = (x, x)
    else:
        y = x
    return y


def one_branch_only(x):
    if x.sum() > 0:  # MARK
        y = x * 2
    return y


def ternary_mismatch(x):
    return x if x.sum() > 0 else x[:1]  # MARK


def return_then_fall_off(x):
    if x.sum() > 0:  # MARK
        return x


def loop_var_changes_shape(x):
    h = x
    for row in x:  # MARK
        h = jnp.concatenate([h, row[None]])
    return h


def defined_in_traced_loop(x, n):
    for i in range(n):  # MARK
        last = x * i
    return last


def list_in_traced_while(x):
    outs = []
    while x.sum() < 10:  # MARK
        x = x + 1
        outs.append(x)
    return outs


def list_read_in_loop(x):
    outs = [x[0]]
    for row in x:  # MARK
        outs.append(outs[-1] + row)
    return outs


def vector_condition(x):
    if x > 0:  # MARK
        x = -x
    return x


def uses_with_return(x):
    if x.sum() > 0:
        return x
    with open(__file__):  # MARK
        return -x


def traced_while(x):
    while x.sum() < 10:  # MARK
        x = x * 2
    return x.sum()


def closure_list(x):
    outs = []

    def inner(v):
        if v.sum() > 0:  # MARK
            outs.append(v)

    inner(x)
    return outs


class _LoopBN(pdx.nn.Layer):
    def __init__(self):
        super().__init__()
        self.bn = pdx.nn.BatchNorm1D(2)

    def forward(self, xs):
        h = xs[0]
        for x_t in xs:  # MARK
            h = self.bn(x_t + h)
        return h


def test_closure_list_changed_under_traced_if():
    with pytest.raises(Dy2StaticError) as e:
        pdx.jit(closure_list)(jnp.ones(2))
    _check(e, closure_list, "# MARK", "list 'outs' belongs to an enclosing function")


def test_layer_state_changed_in_compiled_loop():
    with pytest.raises(Dy2StaticError) as e:
        pdx.jit(_LoopBN())(jnp.ones((3, 4, 2)))
    _check(e, _LoopBN.forward, "# MARK", "BatchNorm running statistics", "eval()")


def test_branch_shapes_differ():
    with pytest.raises(Dy2StaticError) as e:
        pdx.jit(shape_mismatch)(jnp.ones(2))
    _check(e, shape_mismatch, "# MARK", "variable 'y' differs", "float32[2]", "float32[4]")


def test_branch_dtypes_differ():
    with pytest.raises(Dy2StaticError) as e:
        pdx.jit(dtype_mismatch)(jnp.ones(2))
    _check(e, dtype_mismatch, "# MARK", "variable 'y'", "float32[2]", "int32[2]")


def test_branch_structures_differ():
    with pytest.raises(Dy2StaticError) as e:
        pdx.jit(structure_mismatch)(jnp.ones(2))
    _check(e, structure_mismatch, "# MARK", "variable 'y'", "tuple of", "float32[2]")


def test_variable_in_one_branch():
    with pytest.raises(Dy2StaticError) as e:
        pdx.jit(one_branch_only)(jnp.ones(2))
    _check(e, one_branch_only, "# MARK", "'y' is assigned only in the true branch", "both branches")


def test_ternary_mismatch():
    with pytest.raises(Dy2StaticError) as e:
        pdx.jit(ternary_mismatch)(jnp.ones(2))
    _check(e, ternary_mismatch, "# MARK", "float32[2]", "float32[1]")


def test_return_value_on_some_paths_only():
    with pytest.raises(Dy2StaticError) as e:
        pdx.jit(return_then_fall_off)(jnp.ones(2))
    assert f'File "{__file__}"' in str(e.value) and "Add a `return`" in str(e.value)


def test_loop_variable_changes_shape():
    with pytest.raises(Dy2StaticError) as e:
        pdx.jit(loop_var_changes_shape)(jnp.ones((2, 2)))
    _check(e, loop_var_changes_shape, "# MARK", "'h' changes type", "float32[2, 2]", "float32[3, 2]")


def test_variable_first_defined_in_traced_loop():
    with pytest.raises(Dy2StaticError) as e:
        pdx.jit(defined_in_traced_loop)(jnp.ones(2), jnp.int32(3))
    _check(e, defined_in_traced_loop, "# MARK", "'last' is first assigned inside this loop")


def test_list_in_traced_while_needs_bound():
    with pytest.raises(Dy2StaticError) as e:
        pdx.jit(list_in_traced_while)(jnp.ones(2))
    _check(e, list_in_traced_while, "# MARK", "list 'outs'", "pdx.jit.max_iterations")


def test_list_read_in_compiled_loop():
    with pytest.raises(Dy2StaticError) as e:
        pdx.jit(list_read_in_loop)(jnp.ones((3, 2)))
    _check(e, list_read_in_loop, "# MARK", "list 'outs' is read inside a compiled loop")


def test_vector_condition():
    with pytest.raises(Dy2StaticError) as e:
        pdx.jit(vector_condition)(jnp.ones(3))
    _check(e, vector_condition, "# MARK", "shape (3,)", ".all()")


def test_unsupported_construct_full_graph():
    with pytest.raises(Dy2StaticError) as e:
        pdx.jit(uses_with_return, full_graph=True)(jnp.ones(2))
    _check(e, uses_with_return, "# MARK", "full_graph=True", "`with`/`try`")


def test_unsupported_construct_falls_back_without_full_graph():
    # Unconverted, the traced `if` then fails the way plain JAX does.
    with pytest.raises(Exception, match="TracerBoolConversion|boolean"):
        pdx.jit(uses_with_return)(jnp.ones(2))


def test_reverse_mode_through_traced_while():
    @pdx.jit
    def step(x):
        return pdx.grad(traced_while)(x)

    with pytest.raises(Dy2StaticError) as e:
        step(jnp.ones(2))
    _check(e, traced_while, "# MARK", "pdx.jit.max_iterations", "reverse mode")
