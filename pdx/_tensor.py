"""Paddle's Tensor methods on `jax.Array`: `x.unsqueeze(0)`, `x.numpy()`, `x.sum(keepdim=True)`.

pdx tensors are plain `jax.Array`s, no wrapper class. Importing pdx registers
Paddle's `paddle.Tensor` methods on JAX's concrete array type and on its tracer
type, so ported code calls them eagerly and under `jax.jit` / `pdx.jit`,
`jax.grad` and `jax.vmap` alike. The rules:

* **Only adding names.** A Paddle method JAX's arrays lack is added: as the pdx
  top-level op of the same name (`x.unsqueeze(0)` is `pdx.unsqueeze(x, 0)`) or,
  failing that, the function of that name in `pdx.linalg` / `pdx.signal`
  (`x.cond()` is `pdx.linalg.cond(x)`), looked up when `register()` runs, so an op added to pdx later is picked up by
  calling `register()` again; or from the table of special cases below
  (`numpy`, `cpu`, `cuda`, dtype shortcuts such as `x.float()`, properties such
  as `stop_gradient`, Paddle's aliases such as `mul`, `clamp`, `permute`).
* **Extending a JAX name as a strict superset.** For a name JAX already has
  (`sum`, `mean`, `reshape`, `flatten`, `transpose`, ...), pdx keeps JAX's method
  for every JAX call form and routes a call to Paddle's semantics only when it
  uses a form JAX rejects (`keepdim=`, `name=`, `flatten(0, 1)`,
  `sum(0, None, True)`, `reshape([0, -1])`, `squeeze(axis)` over a dim that is
  not 1, ...). A Paddle form that JAX also accepts with another meaning is not
  overridden: those names are listed in `differences()` (`dot`, `repeat`,
  `shape` (a tuple that also takes Paddle's list uses: `Shape`), `size()`,
  `nonzero()`, `std()`/`var()` defaults, `real`/`imag`, `device`).
* **Integer indices are bounds-checked.** `x[5]` on a 3-element axis raises
  Paddle's IndexError instead of JAX's clamped read (a Python or numpy int,
  or a concrete 0-d integer array; traced indices and integer-array indices
  keep JAX's rules). Slices clamp, as in both. A list index (`x[[0, 2]]`) is
  an integer array index, as in Paddle (JAX refuses a bare list).
* **In-place methods raise.** Every `paddle.Tensor` method ending in `_`
  (`add_`, `zero_`, `uniform_`, ...) and `set_value` raise a TypeError naming
  the functional form (`x = x.add(y)`). `x[i] = v` raises JAX's own TypeError,
  which already names `x = x.at[i].set(v)`.
* **No tape.** `x.backward()`, `x.gradient()`, `x.register_hook()` raise and
  name `pdx.grad` / `pdx.value_and_grad`; reading `x.grad` raises an
  AttributeError saying the same; `x.stop_gradient` is True and
  `x.stop_gradient = False` raises (gradients are taken with respect to function
  arguments); `x.stop_gradient = True` is accepted and changes nothing.
  `x.clear_grad()` / `x.clear_gradient()` / `x.retain_grads()` do nothing.
* `x.cuda()` moves a concrete array to the first GPU when JAX has one and
  returns `x` unchanged on a CPU-only machine; `x.cpu()` moves to the CPU. Both
  return `x` unchanged under a trace.

`pdx.Tensor` is Paddle's class name: `isinstance(x, pdx.Tensor)` is true for
every `jax.Array` and tracer (the same test as `pdx.is_tensor`), and
`pdx.Tensor(data)` builds one like `pdx.to_tensor(data)`. Flax Variables
(`nnx.Param`) forward attribute access to the array they hold, so
`param.numpy()`, `param.shape` and arithmetic work on them without pdx help.

Set the environment variable `PDX_TENSOR_METHODS=0` before importing pdx to
leave JAX's arrays untouched (pdx's own code never calls these methods).

Example:
    >>> import pdx
    >>> x = pdx.ones([2, 3])
    >>> x.unsqueeze(0).shape, x.sum(axis=1, keepdim=True).shape
    ((1, 2, 3), (2, 1))
    >>> pdx._tensor.registered_methods()["unsqueeze"]
    'implemented'
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from pdx._dtype import convert_dtype
from pdx._shape import Shape
from pdx._tensor_names import ENV_SWITCH, PADDLE_TENSOR_METHODS
from pdx._tensor_names import methods_enabled as enabled

__all__ = [
    "ENV_SWITCH",
    "Shape",
    "Tensor",
    "differences",
    "enabled",
    "register",
    "registered_methods",
]


IMPLEMENTED, ALIAS, EXTENDED, JAX, IN_PLACE, DIFFERENT = (
    "implemented", "alias", "extended", "jax", "in-place", "different")

_NO_TAPE = (
    "pdx has no gradient tape: gradients are taken with respect to function arguments. "
    "Write the computation as a function and call `loss, grads = pdx.value_and_grad(loss_fn)(model, x)` "
    "(or `pdx.grad(f)(x)`), then `opt.step(grads)`."
)


# --------------------------------------------------------------------------------------
# Adapter: the one place that knows how JAX looks up methods on its array types.
#
# Relies on (jax 0.10, jax/_src/numpy/array_methods.py, register_jax_array_methods):
#   * concrete arrays are instances of `jax._src.array.ArrayImpl`; JAX sets their methods
#     with setattr as plain Python functions (`ArrayImpl.sum is array_methods._sum`);
#   * traced values are instances of subclasses of `jax._src.core.Tracer`; JAX sets a
#     forwarding function per method on `Tracer` itself (`_set_tracer_aval_forwarding`),
#     and a class attribute of `Tracer` wins over `Tracer.__getattr__` (which forwards
#     the remaining names to the abstract value); the subclasses (DynamicJaxprTracer,
#     JVPTracer, BatchTracer, ...) do not redefine these names.
# tests/test_tensor_methods.py::test_adapter_assumptions checks each point.
# --------------------------------------------------------------------------------------


def _array_classes() -> tuple[type, ...]:
    from jax._src import core
    from jax._src.array import ArrayImpl

    return (ArrayImpl, core.Tracer)


def _tracer_class() -> type:
    from jax._src import core

    return core.Tracer


def _is_traced(x) -> bool:
    return isinstance(x, _TRACER)


_TRACER = _tracer_class()


# --------------------------------------------------------------------------------------
# Extended JAX names: JAX's call forms go to JAX's own method, Paddle-only forms to pdx.
# Each factory takes JAX's method and returns the superset; `_PDX` is the pdx module.
# --------------------------------------------------------------------------------------

_PDX: types.ModuleType | None = None


def _ext_reduction(name: str, paddle_kw: frozenset, keepdim_pos: int):
    """A reduction whose Paddle keepdim sits at `keepdim_pos` (JAX's dtype/out slot there)."""

    def factory(jax_method):
        def method(self, *args, **kwargs):
            if (kwargs and not paddle_kw.isdisjoint(kwargs)) or (
                    len(args) > keepdim_pos and isinstance(args[keepdim_pos], bool)):
                return getattr(_PDX, name)(self, *args, **kwargs)
            return jax_method(self, *args, **kwargs)
        return method
    return factory


def _ext_keywords(name: str, paddle_kw: frozenset, pdx_name: str | None = None):
    """A method that differs from JAX's only by Paddle's keyword names (`name=`, `perm=`, ...)."""

    def factory(jax_method):
        def method(self, *args, **kwargs):
            if kwargs and not paddle_kw.isdisjoint(kwargs):
                return getattr(_PDX, pdx_name or name)(self, *args, **kwargs)
            return jax_method(self, *args, **kwargs)
        return method
    return factory


_FLATTEN_KW = frozenset({"start_axis", "stop_axis", "name"})


def _ext_flatten(jax_method):
    def flatten(self, *args, **kwargs):
        # JAX's only positional is `order` (a string); Paddle's are integer axes.
        if (args and not isinstance(args[0], str)) or (kwargs and not _FLATTEN_KW.isdisjoint(kwargs)):
            return _PDX.flatten(self, *args, **kwargs)
        return jax_method(self, *args, **kwargs)
    return flatten


_RESHAPE_KW = frozenset({"shape", "name"})


def _ext_reshape(jax_method):
    def reshape(self, *args, **kwargs):
        if kwargs and not _RESHAPE_KW.isdisjoint(kwargs):
            return _PDX.reshape(self, *args, **kwargs)
        try:
            return jax_method(self, *args, **kwargs)
        except (TypeError, ValueError, ZeroDivisionError):  # what JAX raises for a 0 dim
            # Paddle's forms JAX rejects: a 0 copies the input's dim, a 1-element tensor is a
            # dim. pdx.reshape also raises for what neither takes, a ShapeError (ValueError
            # as Paddle's, TypeError as JAX's) naming both shapes.
            if kwargs:
                raise
            dims = args[0] if len(args) == 1 and isinstance(args[0], (list, tuple)) else args
            if all(isinstance(d, (int, np.integer, jax.Array, np.ndarray)) for d in dims):
                return _PDX.reshape(self, list(dims))
            raise
    return reshape


def _ext_squeeze(jax_method):
    def squeeze(self, *args, **kwargs):
        if kwargs and "name" in kwargs:
            return _PDX.squeeze(self, *args, **kwargs)
        try:
            return jax_method(self, *args, **kwargs)
        except ValueError:
            # Paddle leaves a named dim that is not 1 in place; JAX raises for it.
            axis = args[0] if args else kwargs.get("axis")
            axes = axis if isinstance(axis, (list, tuple)) else (axis,)
            ndim = self.ndim
            if axis is not None and all(type(a) is int and -ndim <= a < ndim for a in axes):
                return _PDX.squeeze(self, *args, **kwargs)
            raise
    return squeeze


def _ext_sort(name: str):
    def factory(jax_method):
        def method(self, *args, **kwargs):
            # JAX takes only `axis` positionally; Paddle's second is `descending`.
            if len(args) > 1 or (kwargs and "name" in kwargs):
                return getattr(_PDX, name)(self, *args, **kwargs)
            return jax_method(self, *args, **kwargs)
        return method
    return factory


_TAKE_KW = frozenset({"index", "name"})


def _ext_take(jax_method):
    def take(self, *args, **kwargs):
        # JAX's second positional is `axis`; Paddle's is `mode` ('raise' | 'wrap' | 'clip'),
        # and JAX does not implement mode='raise'.
        if (len(args) > 1 and isinstance(args[1], str)) or kwargs.get("mode") == "raise" or (
                kwargs and not _TAKE_KW.isdisjoint(kwargs)):
            return _paddle_take(self, *args, **kwargs)
        return jax_method(self, *args, **kwargs)
    return take


def _paddle_take(x, index, mode="raise", name=None):
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"Tensor.take: `mode` must be 'raise', 'wrap' or 'clip'; got {mode!r}")
    flat = jnp.ravel(x)
    index = jnp.asarray(index)
    n = flat.shape[0]
    if mode == "raise":
        if not _is_traced(index):
            bad = np.asarray(index)
            if bad.size and (bad.min() < -n or bad.max() >= n):
                raise IndexError(f"Tensor.take: index out of range for a tensor of {n} elements; "
                                 f"got indices in [{bad.min()}, {bad.max()}]")
        index = jnp.where(index < 0, index + n, index)
        return jnp.take(flat, index, mode="clip")
    if mode == "clip":
        return jnp.take(flat, jnp.clip(index, 0, n - 1), mode="clip")
    return jnp.take(flat, index, mode="wrap")


def _ext_nonzero(jax_method):
    def nonzero(self, *args, **kwargs):
        # JAX's nonzero takes no positional and no `as_tuple`.
        if args or "as_tuple" in kwargs:
            return _PDX.nonzero(self, *args, **kwargs)
        return jax_method(self, *args, **kwargs)
    return nonzero


_VIEW_KW = frozenset({"shape_or_dtype", "name"})


def _ext_view(jax_method):
    def view(self, *args, **kwargs):
        # JAX's view takes a dtype; Paddle's also takes a shape (a list or tuple of ints).
        if (args and isinstance(args[0], (list, tuple))) or (kwargs and not _VIEW_KW.isdisjoint(kwargs)):
            return _paddle_view(self, *args, **kwargs)
        return jax_method(self, *args, **kwargs)
    return view


def _paddle_view(x, shape_or_dtype, name=None):
    if isinstance(shape_or_dtype, (list, tuple)):
        return _PDX.reshape(x, list(shape_or_dtype))
    return x.view(convert_dtype(shape_or_dtype))


_SWAPAXES_KW = frozenset({"perm", "name"})


def _ext_swapaxes(jax_method):
    def swapaxes(self, *args, **kwargs):
        # Paddle's swapaxes also takes one permutation (as transpose); JAX needs two axes.
        if len(args) == 1 or (kwargs and not _SWAPAXES_KW.isdisjoint(kwargs)):
            if len(args) == 1 and isinstance(args[0], int):
                return jax_method(self, *args, **kwargs)
            return _PDX.transpose(self, *args, **kwargs)
        return jax_method(self, *args, **kwargs)
    return swapaxes


_KEEPDIM = frozenset({"keepdim", "name"})

# name -> factory(jax_method) -> method. Every entry keeps JAX's result for JAX's forms;
# tests/test_tensor_methods.py::test_jax_call_forms_unchanged checks them name by name.
_EXTENDED: dict[str, Callable] = {
    "sum": _ext_reduction("sum", _KEEPDIM, 2),
    "mean": _ext_reduction("mean", _KEEPDIM, 1),
    "prod": _ext_reduction("prod", _KEEPDIM, 1),
    "max": _ext_reduction("max", _KEEPDIM, 1),
    "min": _ext_reduction("min", _KEEPDIM, 1),
    "all": _ext_reduction("all", _KEEPDIM, 1),
    "any": _ext_reduction("any", _KEEPDIM, 1),
    "argmax": _ext_reduction("argmax", frozenset({"keepdim", "dtype", "name"}), 1),
    "argmin": _ext_reduction("argmin", frozenset({"keepdim", "dtype", "name"}), 1),
    "std": _ext_reduction("std", frozenset({"unbiased", "keepdim", "name"}), 1),
    "var": _ext_reduction("var", frozenset({"unbiased", "keepdim", "name"}), 1),
    "cumsum": _ext_keywords("cumsum", frozenset({"name"})),
    "cumprod": _ext_keywords("cumprod", frozenset({"dim", "name"})),
    "clip": _ext_keywords("clip", frozenset({"name"})),
    "transpose": _ext_keywords("transpose", frozenset({"perm", "name"})),
    "flatten": _ext_flatten,
    "reshape": _ext_reshape,
    "squeeze": _ext_squeeze,
    "argsort": _ext_sort("argsort"),
    "sort": _ext_sort("sort"),
    "take": _ext_take,
    "nonzero": _ext_nonzero,
    "view": _ext_view,
    "swapaxes": _ext_swapaxes,
}

# JAX names with Paddle's meaning already, left as JAX defines them.
_SAME_AS_JAX = ("T", "mT", "astype", "clone", "conj", "diagonal", "dtype", "item",
                "itemsize", "ndim", "ravel", "round", "tolist", "trace")

# Deliberate differences: name -> why. The coverage report reads this through differences().
_DIFFERENCES: dict[str, str] = {
    "shape": "a tuple (JAX's), not Paddle's list: it takes Paddle's list uses (`x.shape[:-1] + [h, d]` "
             "is a list, `x.shape == [2, 3]` compares dims), but `s = x.shape; s[0] = -1` raises: write "
             "`s = list(x.shape)` (pdx._tensor.Shape; benchmarks/RESULTS.md, 'x.shape')",
    "dot": "JAX's x.dot(y) is a matrix product for 2-D inputs, Paddle's a row-wise dot product; "
           "use pdx.dot(x, y) for Paddle's",
    "size": "JAX's int attribute: x.size == 6 holds, but Paddle's callable forms x.size() / "
            "x.size(dim) fail; use x.shape / x.shape[dim]",
    "repeat": "JAX's x.repeat(n) repeats each element (numpy), Paddle's tiles the tensor; use x.tile(...)",
    "nonzero": "x.nonzero() keeps JAX's tuple of index arrays; x.nonzero(as_tuple=False) or "
               "pdx.nonzero(x) gives Paddle's [N, ndim] tensor",
    "std": "x.std() / x.std(axis) keep JAX's population std (ddof=0); Paddle's forms with "
           "unbiased=/keepdim= are Paddle's (unbiased by default), as is pdx.std(x)",
    "var": "x.var() / x.var(axis) keep JAX's population variance (ddof=0); Paddle's forms with "
           "unbiased=/keepdim= are Paddle's (unbiased by default), as is pdx.var(x)",
    "real": "a JAX property (x.real), not a method (Paddle's x.real())",
    "imag": "a JAX property (x.imag), not a method (Paddle's x.imag())",
    "device": "JAX's Device of a concrete array, not Paddle's place string; see x.place",
    "backward": "no gradient tape: raises and names pdx.grad / pdx.value_and_grad",
    "grad": "no gradient tape: reading x.grad raises and names pdx.grad / pdx.value_and_grad",
    "gradient": "no gradient tape: raises and names pdx.grad / pdx.value_and_grad",
    "register_hook": "no gradient tape: transform gradients inside the function given to pdx.grad",
    "set_value": "tensors are immutable: rebind (x = pdx.to_tensor(v)); parameters have p.set_value(v)",
}


# --------------------------------------------------------------------------------------
# Special cases: methods added from this table rather than from a pdx op of the same name.
# --------------------------------------------------------------------------------------


_NO_VALUE = (
    "Tensor.numpy(): this tensor is traced (inside pdx.jit / jax.jit) and has no value while the "
    "program is built. Return it from the compiled function and call .numpy() on the result, "
    "or return it as aux (`pdx.value_and_grad(f, has_aux=True)`) and update metrics outside the step."
)


def _concrete_value(x):
    """The value of a tracer that holds one (JAX's JVP/linearize tracers over concrete inputs,
    as when pdx.value_and_grad runs op by op), else None. Adapter: jax._src.core.to_concrete_value."""
    from jax._src import core

    return core.to_concrete_value(x)


def _numpy(self, *flag):
    """Paddle's `Tensor.numpy()`: a writable numpy copy, as Paddle's is.

    Paddle's eager `numpy` also takes one positional flag (its API tests call
    `x.numpy(False)`); it is accepted and changes nothing here.

    Inside a function that `pdx.value_and_grad` differentiates op by op the
    tensor is a JAX tracer that holds its value: `numpy()` gives that value
    (detached from the gradient, as in Paddle). Under a compiling trace there
    is no value, and the error says where to read it instead.
    """
    if _is_traced(self):
        value = _concrete_value(self)
        if value is None:  # JAX's class (pdx.value_and_grad falls back to op by op on it), pdx's hint
            error = jax.errors.TracerArrayConversionError(self)
            error.add_note(_NO_VALUE)
            raise error
        return np.array(value)
    if len(flag) > 1 or (flag and not isinstance(flag[0], (bool, np.bool_))):
        raise TypeError(f"Tensor.numpy() takes at most one bool flag; got {flag!r}")
    return np.array(self)


def _cpu(self):
    """Paddle's `Tensor.cpu()`: the array on the CPU (unchanged under a trace)."""
    if _is_traced(self):
        return self
    return jax.device_put(self, jax.devices("cpu")[0])


def _cuda(self, device_id=None, blocking=True):
    """Paddle's `Tensor.cuda()`: the array on a GPU; unchanged on a CPU-only machine or under a trace."""
    del blocking
    if _is_traced(self):
        return self
    try:
        gpus = jax.devices("gpu")
    except RuntimeError:
        return self
    return jax.device_put(self, gpus[device_id or 0])


_DEVICE_NAMES = ("cpu", "gpu", "cuda", "xpu", "tpu")


def _to(self, *args, **kwargs):
    """Paddle's `Tensor.to(device=None, dtype=None, blocking=None)`; also `to(other_tensor)`."""
    device, dtype = kwargs.pop("device", None), kwargs.pop("dtype", None)
    kwargs.pop("blocking", None)
    if kwargs:
        raise TypeError(f"Tensor.to: unexpected arguments {sorted(kwargs)}; expected device=, dtype=, blocking=")
    for a in args:
        if isinstance(a, jax.Array):
            dtype = a.dtype
        elif isinstance(a, str) and a.split(":")[0].lower() in _DEVICE_NAMES:
            device = a
        elif isinstance(a, bool) or a is None:
            continue
        else:
            dtype = a
    out = self if dtype is None else self.astype(convert_dtype(dtype))
    if device is not None:
        kind = str(device).split(":")[0].lower()
        out = _cpu(out) if kind == "cpu" else _cuda(out) if kind in ("gpu", "cuda") else out
    return out


def _t(self):
    """Paddle's `Tensor.t()`: transpose of a tensor of rank <= 2."""
    if self.ndim > 2:
        raise ValueError(f"Tensor.t: needs a tensor of rank <= 2; got x.shape={tuple(self.shape)}. "
                         "Use x.transpose(perm) for higher ranks.")
    return self if self.ndim < 2 else self.T


def _permute(self, *dims):
    """Paddle's `Tensor.permute(*dims)`: `x.permute(1, 0)` or `x.permute([1, 0])`."""
    if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = tuple(dims[0])
    return _PDX.transpose(self, list(dims))


def _swapdims(self, dim0, dim1):
    """Paddle's `Tensor.swapdims(dim0, dim1)` (swap two axes)."""
    return jnp.swapaxes(self, dim0, dim1)


def _moveaxis(self, source, destination, name=None):
    """Paddle's `Tensor.moveaxis(source, destination)`."""
    return jnp.moveaxis(self, source, destination)


def _matrix_transpose(self, name=None):
    """Paddle's `Tensor.matrix_transpose()`: swap the last two axes."""
    return jnp.matrix_transpose(self)


def _detach(self):
    """Paddle's `Tensor.detach()`: the same values, no gradient flows back (`jax.lax.stop_gradient`)."""
    return jax.lax.stop_gradient(self)


def _clone(self):
    """Paddle's `Tensor.clone()`: a copy (gradients flow through it)."""
    return jnp.array(self, copy=True)


def _identity(self, *args, **kwargs):
    return self


def _noop(self, *args, **kwargs):
    return None


def _dim(self):
    """Paddle's `Tensor.dim()` / `ndimension()`: the rank (`x.ndim`)."""
    return self.ndim


def _element_size(self):
    """Paddle's `Tensor.element_size()`: bytes per element."""
    return self.dtype.itemsize


def _is_floating_point(self):
    """Whether the dtype is a floating type."""
    return bool(jnp.issubdtype(self.dtype, jnp.floating))


def _is_complex(self):
    """Whether the dtype is a complex type."""
    return bool(jnp.issubdtype(self.dtype, jnp.complexfloating))


def _is_integer(self):
    """Whether the dtype is an integer type."""
    return bool(jnp.issubdtype(self.dtype, jnp.integer))


def _is_empty(self):
    """Paddle's `Tensor.is_empty()`: a bool tensor, True when the tensor has no elements."""
    return jnp.asarray(self.size == 0)


def _is_same_shape(self, y):
    """Whether `y` has the same shape."""
    return tuple(self.shape) == tuple(jnp.shape(y))


def _type_as(self, other):
    """Paddle's `Tensor.type_as(other)`: cast to `other`'s dtype."""
    return self.astype(other.dtype)


def _view_as(self, other):
    """Paddle's `Tensor.view_as(other)`: reshape to `other`'s shape."""
    return jnp.reshape(self, other.shape)


def _new(fill):
    def new(self, shape, *args, dtype=None, **kwargs):
        if fill is None:  # new_full(shape, fill_value, dtype=None)
            value, *args = args
        else:
            value = fill
        if args:
            dtype = args[0]
        dt = convert_dtype(dtype) if dtype is not None else self.dtype
        return jnp.full(tuple(_shape_list(shape)), value, dtype=dt)
    return new


def _shape_list(shape):
    if isinstance(shape, int):
        return [shape]
    return [int(s) for s in shape]


def _split_with_sizes(self, split_sizes, dim=0):
    """Paddle's `Tensor.split_with_sizes(split_sizes, dim=0)`: `pdx.split(x, split_sizes, axis=dim)`."""
    return _PDX.split(self, list(split_sizes), axis=dim)


def _apply(self, func):
    """Paddle's `Tensor.apply(func)`: `func(x)`."""
    return func(self)


def _get_device(self):
    """Paddle's `Tensor.get_device()`: -1 on the CPU, else the device id."""
    device = next(iter(self.devices()))
    return -1 if device.platform == "cpu" else device.id


def _place(self):
    """Paddle's `Tensor.place`: the JAX device of a concrete array (eager only)."""
    return next(iter(self.devices()))


def _dist(name):
    def attr(self):
        import pdx.distributed

        return getattr(pdx.distributed, name)(self)

    attr.__name__ = name
    return attr


_placements = _dist("get_placements")
_placements.__doc__ = ("Paddle's `Tensor.placements`: one Shard/Replicate per mesh dimension, read back from the "
                       "array's NamedSharding (None for an array on one device or inside a trace).")
_process_mesh = _dist("get_process_mesh")
_process_mesh.__doc__ = "Paddle's `Tensor.process_mesh`: the pdx.distributed.ProcessMesh of the array's NamedSharding, or None."
_is_dist = _dist("is_dist")
_is_dist.__doc__ = "Paddle's `Tensor.is_dist()`: whether the array has a NamedSharding (pdx.distributed)."


def _is_cuda(self):
    """Whether the concrete array lives on a GPU."""
    return not _is_traced(self) and next(iter(self.devices())).platform == "gpu"


def _raise_no_tape(name):
    def method(self, *args, **kwargs):
        raise RuntimeError(f"Tensor.{name}(): {_NO_TAPE}")
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"Paddle's `Tensor.{name}`: raises; {_NO_TAPE}"
    return method


class _NoTapeAttributeError(AttributeError):
    """Reading a tape attribute (`x.grad`): an AttributeError, so hasattr() stays False."""


def _grad_property(self):
    raise _NoTapeAttributeError(f"Tensor.grad: {_NO_TAPE}")


def _stop_gradient_get(self):
    return True


def _stop_gradient_set(self, value):
    if value is not True:
        raise AttributeError(
            f"x.stop_gradient = {value!r}: {_NO_TAPE} Every tensor is a constant to the function "
            "that holds it, so stop_gradient is always True.")


def _requires_grad_set(self, value):
    if value:
        raise AttributeError(f"x.requires_grad = {value!r}: {_NO_TAPE}")


def _set_value(self, value):
    raise TypeError(
        "Tensor.set_value: tensors are immutable in pdx (jax.Array). Rebind instead: "
        "`x = pdx.to_tensor(value)`; a parameter (nnx.Param) has `p.set_value(value)`.")


_CASTS = {
    "float": "float32", "double": "float64", "half": "float16", "bfloat16": "bfloat16",
    "int": "int32", "long": "int64", "bool": "bool", "short": "int16", "byte": "uint8",
    "char": "int8", "float16": "float16", "float32": "float32", "float64": "float64",
    "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64", "uint8": "uint8",
    "complex64": "complex64", "complex128": "complex128", "cfloat": "complex64",
    "cdouble": "complex128",
}


def _cast_method(name, dtype):
    def method(self):
        return self.astype(convert_dtype(dtype))
    method.__name__ = method.__qualname__ = name
    method.__doc__ = (f"Paddle's `Tensor.{name}()`: cast to {dtype} (64-bit types narrow to 32 bits "
                      "unless jax_enable_x64 is set).")
    return method


def _strides(self):
    """Element strides of the row-major layout every jax.Array has (Paddle's `x.strides`)."""
    out, step = [], 1
    for d in reversed(self.shape):
        out.append(step)
        step *= int(d)
    return out[::-1]


def _stride(self, dim=None):
    strides = _strides(self)
    return strides if dim is None else strides[dim]


def _data_ptr(self):
    """Address of the array's device buffer (jax's `unsafe_buffer_pointer`)."""
    return self.unsafe_buffer_pointer()


def _to_sparse_coo(self, sparse_dim):
    from pdx import sparse

    return sparse.to_sparse_coo(self, sparse_dim)


def _to_sparse_csr(self):
    from pdx import sparse

    return sparse.to_sparse_csr(self)


def _fill_diagonal_tensor(self, y, offset=0, dim1=0, dim2=1, name=None):
    """Paddle's `x.fill_diagonal_tensor(y, offset, dim1, dim2)`: x with the diagonal replaced by y."""
    from pdx.ops import diagonal_scatter

    return diagonal_scatter(self, y, offset=offset, axis1=dim1, axis2=dim2)


class _Special(NamedTuple):
    status: str
    attr: Any  # a function (a method) or a property


def _specials() -> dict[str, _Special]:
    m = {
        "numpy": _numpy, "cpu": _cpu, "cuda": _cuda, "to": _to, "t": _t, "permute": _permute,
        "swapdims": _swapdims, "moveaxis": _moveaxis, "matrix_transpose": _matrix_transpose,
        "detach": _detach, "clone": _clone, "contiguous": _identity, "pin_memory": _identity,
        "is_contiguous": lambda self: True, "dim": _dim, "ndimension": _dim,
        "element_size": _element_size, "is_floating_point": _is_floating_point,
        "is_complex": _is_complex, "is_integer": _is_integer, "is_empty": _is_empty,
        "is_same_shape": _is_same_shape, "type_as": _type_as, "view_as": _view_as,
        "new_zeros": _new(0), "new_ones": _new(1), "new_empty": _new(0), "new_full": _new(None),
        "apply": _apply, "get_device": _get_device, "split_with_sizes": _split_with_sizes,
        "is_dense": lambda self: True, "is_sparse": lambda self: False,
        "is_sparse_coo": lambda self: False, "is_sparse_csr": lambda self: False,
        "is_dist": _is_dist, "is_selected_rows": lambda self: False,
        "clear_grad": _noop, "clear_gradient": _noop, "retain_grads": _noop,
        "backward": _raise_no_tape("backward"), "gradient": _raise_no_tape("gradient"),
        "register_hook": _raise_no_tape("register_hook"), "set_value": _set_value,
        "value": _identity, "to_dense": _identity, "data_ptr": _data_ptr, "stride": _stride,
        "get_strides": _strides, "dense_dim": _dim, "sparse_dim": lambda self: 0,
        "to_sparse_coo": _to_sparse_coo, "to_sparse_csr": _to_sparse_csr,
        "fill_diagonal_tensor": _fill_diagonal_tensor,
    }
    out = {name: _Special(IMPLEMENTED, f) for name, f in m.items()}
    out.update({name: _Special(IMPLEMENTED, _cast_method(name, dt)) for name, dt in _CASTS.items()})
    props = {
        "stop_gradient": property(_stop_gradient_get, _stop_gradient_set,
                                  doc="Always True: " + _NO_TAPE),
        "requires_grad": property(lambda self: False, _requires_grad_set,
                                  doc="Always False: " + _NO_TAPE),
        "is_leaf": property(lambda self: True, doc="Always True: every tensor is a leaf."),
        "grad_fn": property(lambda self: None, doc="Always None: " + _NO_TAPE),
        "persistable": property(lambda self: False, doc="Always False."),
        "place": property(_place, doc=_place.__doc__),
        "placements": property(_placements, doc=_placements.__doc__),
        "process_mesh": property(_process_mesh, doc=_process_mesh.__doc__),
        "is_cuda": property(_is_cuda, doc=_is_cuda.__doc__),
        "grad": property(_grad_property, doc="Raises: " + _NO_TAPE),
        "data": property(lambda self: self, doc="The tensor itself (Paddle's legacy `x.data`)."),
        "strides": property(_strides, doc=_strides.__doc__),
        "offset": property(lambda self: 0, doc="Always 0: a jax.Array starts at its buffer."),
        "inplace_version": property(lambda self: 0, doc="Always 0: pdx tensors are never changed in place."),
    }
    out.update({name: _Special(IMPLEMENTED, p) for name, p in props.items()})
    for name in ("backward", "gradient", "register_hook", "set_value", "grad"):
        out[name] = _Special(DIFFERENT, out[name].attr)
    return out


# Paddle's other names for a method: name -> pdx op it calls (used only when pdx has no op
# of the Paddle name itself).
_ALIASES = {
    "mul": "multiply", "sub": "subtract", "div": "divide", "true_divide": "divide",
    "eq": "equal", "ne": "not_equal", "lt": "less_than", "le": "less_equal",
    "gt": "greater_than", "ge": "greater_equal", "greater": "greater_than", "less": "less_than",
    "clamp": "clip", "floor_mod": "remainder", "reverse": "flip", "unstack": "unbind",
    "take_along_dim": "take_along_axis", "negative": "neg",
}

# pdx top-level names that are not tensor functions although Paddle has a Tensor
# attribute of the same name.
_NOT_METHODS = frozenset({"grad", "device", "dtype", "shape", "place", "name", "data", "type"})


# In-place methods: the functional form to name in the error, where it is not `x.<base>(...)`.
_IN_PLACE_HINTS = {
    "zero_": "x = pdx.zeros_like(x)",
    "fill_": "x = pdx.full_like(x, value)",
    "uniform_": "x = pdx.uniform(x.shape, min=..., max=...)",
    "normal_": "x = pdx.normal(mean, std, x.shape)",
    "bernoulli_": "x = pdx.bernoulli(p)",
    "exponential_": "x = jax.random.exponential(key, x.shape) / lam",
    "cauchy_": "x = loc + scale * jax.random.cauchy(key, x.shape)",
    "geometric_": "x = jax.random.geometric(key, p, x.shape)",
    "log_normal_": "x = jnp.exp(mean + std * jax.random.normal(key, x.shape))",
    "random_": "x = pdx.randint(low, high, x.shape)",
    "copy_": "x = y (arrays are values; rebinding copies nothing)",
    "set_": "x = y",
    "index_put_": "x = x.at[indices].set(value)",
    "fill_diagonal_": "x = x.at[jnp.diag_indices(n)].set(value)",
    "requires_grad_": "grads = pdx.grad(f)(x) (gradients are taken with respect to function arguments)",
    "grad_": "grads = pdx.grad(f)(x) (gradients are returned, not stored)",
    "detach_": "x = x.detach()",
    "resize_": "x = x.reshape(shape) (or pdx.zeros(shape) for a new size)",
    "reconstruct_from_": "x = pdx.to_tensor(data)",
}


def _in_place_method(name: str):
    base = name[:-1]
    hint = _IN_PLACE_HINTS.get(name, f"x = x.{base}(...)")

    def method(self, *args, **kwargs):
        raise TypeError(f"Tensor.{name}: tensors are immutable in pdx (jax.Array) and have no "
                        f"in-place methods; use the functional form: {hint}")
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"Paddle's in-place `Tensor.{name}`: raises; use {hint}."
    return method


def _is_op(obj) -> bool:
    return callable(obj) and not isinstance(obj, (type, types.ModuleType))


def _op_method(name: str, op_name: str, namespace: str | None = None):
    def method(self, *args, **kwargs):
        return _resolve_op(op_name, namespace)(self, *args, **kwargs)
    method.__name__ = method.__qualname__ = name
    qualified = op_name if namespace is None else f"{namespace}.{op_name}"
    method.__doc__ = f"Paddle's `Tensor.{name}`: `pdx.{qualified}(x, ...)`."
    method._pdx_op = (op_name, namespace)
    return method


def _resolve_op(op_name: str, namespace: str | None):
    where = _PDX if namespace is None else getattr(_PDX, namespace)
    return getattr(where, op_name)


# Paddle namespaces whose functions are Tensor methods too (x.cond() is paddle.linalg.cond(x),
# x.stft() is paddle.signal.stft(x)), searched after pdx's top level.
_NAMESPACES = ("linalg", "signal")


def _namespace_of(pdx, name: str) -> str | None:
    for ns in _NAMESPACES:
        module = getattr(pdx, ns, None)
        if isinstance(module, types.ModuleType) and _is_op(getattr(module, name, None)):
            return ns
    return None


# --------------------------------------------------------------------------------------
# Registration.
# --------------------------------------------------------------------------------------

_STATUS: dict[str, str] = {}
_INSTALLED: dict[tuple[type, str], Any] = {}  # (class, name) -> the attribute pdx set
_JAX_ORIGINAL: dict[tuple[type, str], Any] = {}


def _plan(pdx) -> dict[str, tuple[str, Any]]:
    """name -> (status, attr or extension factory), from pdx's ops and the tables above."""
    specials = _specials()
    plan: dict[str, tuple[str, Any]] = {}
    for name in PADDLE_TENSOR_METHODS:
        if name in _EXTENDED:
            plan[name] = (EXTENDED, _EXTENDED[name])
        elif name.endswith("_"):
            plan[name] = (IN_PLACE, _in_place_method(name))
        elif name in specials:
            plan[name] = specials[name]
        elif name not in _NOT_METHODS and _is_op(getattr(pdx, name, None)):
            plan[name] = (IMPLEMENTED, _op_method(name, name))
        elif name not in _NOT_METHODS and (ns := _namespace_of(pdx, name)) is not None:
            plan[name] = (IMPLEMENTED, _op_method(name, name, ns))
        elif name in _ALIASES and _is_op(getattr(pdx, _ALIASES[name], None)):
            plan[name] = (ALIAS, _op_method(name, _ALIASES[name]))
    return plan


def _index_items(index) -> tuple:
    return index if isinstance(index, tuple) else (index,)


def _consumes(item) -> int:
    """How many axes of the indexed array an index item stands for (-1: unknown, stop checking)."""
    if item is None:
        return 0
    if isinstance(item, (slice, int, np.integer)) and not isinstance(item, bool):
        return 1
    if isinstance(item, (jax.Array, np.ndarray)) and not isinstance(item, jax.core.Tracer):
        return item.ndim if item.dtype == bool else 1
    return -1


def check_index(shape: tuple, index) -> None:
    """Raise Paddle's IndexError for a concrete integer index outside its axis (`x[5]` on size 3)."""
    items = _index_items(index)
    axis = 0
    for position, item in enumerate(items):
        if item is Ellipsis:
            rest = [_consumes(i) for i in items[position + 1:] if i is not Ellipsis]
            if any(n < 0 for n in rest):
                return
            axis = len(shape) - sum(rest)
            continue
        n = _consumes(item)
        if n < 0:
            return
        if n == 1 and axis < len(shape) and not isinstance(item, slice) and np.ndim(item) == 0 \
                and (isinstance(item, (int, np.integer)) or jnp.issubdtype(item.dtype, jnp.integer)):
            value, size = int(item), shape[axis]
            if not -size <= value < size:
                raise IndexError(f"index {value} is out of bounds for axis {axis} with size {size}: it should be "
                                 f"in the range of [{-size}, {size}) (Paddle's rule; JAX would clamp it)")
        axis += n


def _bounds_checked_getitem(original: Callable) -> Callable:
    def __getitem__(self, index, /):
        if isinstance(index, list):  # Paddle's x[[0, 2]]: a list index is an integer (or bool) array index
            index = np.asarray(index)
        check_index(self.shape, index)
        return original(self, index)

    __getitem__.pdx_original = original
    return __getitem__


def _install_index_check() -> None:
    for cls in _array_classes():
        current = cls.__dict__.get("__getitem__")
        if current is None or getattr(current, "pdx_original", None) is not None:
            continue
        _JAX_ORIGINAL[(cls, "__getitem__")] = current
        setattr(cls, "__getitem__", _bounds_checked_getitem(current))


def _shape_property(get: Callable) -> property:
    # dims -> its Shape: shapes repeat, one object each. Only integer dims are kept: a symbolic dim
    # (export with None dims) compares with another scope's by raising, and keeps its scope alive.
    cache: dict[tuple, Shape] = {}

    def shape(self):
        dims = get(self)
        try:
            out = cache.get(dims)
        except Exception:  # noqa: BLE001 - a symbolic dim hashed like a kept key: no cache for it
            return Shape(dims)
        if out is None:
            out = Shape(dims)
            if all(type(d) is int for d in dims):
                if len(cache) >= 65536:
                    cache.clear()
                cache[dims] = out
        return out

    prop = property(shape, doc="The dims (a `pdx.Tensor`'s `Shape`: a tuple that also takes Paddle's list uses).")
    prop.fget.pdx_original = get
    return prop


def _concrete_conversion(name: str, original: Callable | None, convert: Callable) -> Callable:
    """`Tracer.<name>` that converts a tracer holding a value (pdx.value_and_grad op by op) as its value
    (detached, as Paddle's eager `float(loss)` / `f"{loss:.4f}"`), and keeps JAX's behaviour otherwise."""

    def method(self, *args):
        value = _concrete_value(self)
        if value is not None:
            return convert(np.asarray(value), *args)
        if original is None:
            return object.__format__(self, *args)
        return original(self, *args)

    method.__name__ = name
    method.pdx_original = original
    return method


_CONVERSIONS = {"__float__": float, "__complex__": complex, "__format__": format}


def _install_conversions() -> None:
    # JAX's tracers convert int() and bool() of a held value already; float(), complex() and formatting too
    tracer = _tracer_class()
    for name, convert in _CONVERSIONS.items():
        current = tracer.__dict__.get(name)
        if getattr(current, "pdx_original", False) is not False:
            continue
        _JAX_ORIGINAL[(tracer, name)] = current
        setattr(tracer, name, _concrete_conversion(name, current, convert))


def _install_shape() -> None:
    for cls in _array_classes():
        current = cls.__dict__.get("shape")
        if not isinstance(current, property) or getattr(current.fget, "pdx_original", None) is not None:
            continue
        _JAX_ORIGINAL[(cls, "shape")] = current
        setattr(cls, "shape", _shape_property(current.fget))


def register() -> dict[str, str]:
    """Set Paddle's Tensor methods on JAX's array and tracer types (idempotent).

    Runs at the end of `import pdx` unless `PDX_TENSOR_METHODS=0`. Call it again
    after adding ops to pdx to register methods for them. A name JAX defines is
    only replaced by its strict-superset extension (see the module docstring).

    Returns:
      `registered_methods()`.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> _ = pdx._tensor.register()
      >>> jnp.ones(2).unsqueeze(0).shape
      (1, 2)
    """
    global _PDX
    if not enabled():
        return {}
    pdx = sys.modules["pdx"]
    _PDX = pdx
    plan = _plan(pdx)
    for (cls, name), attr in list(_INSTALLED.items()):
        if name not in plan and cls.__dict__.get(name) is attr:  # its pdx op is gone
            if (cls, name) in _JAX_ORIGINAL:
                setattr(cls, name, _JAX_ORIGINAL.pop((cls, name)))
            else:
                delattr(cls, name)
            del _INSTALLED[(cls, name)]
    for cls in _array_classes():
        for name, (status, attr) in plan.items():
            key = (cls, name)
            current = cls.__dict__.get(name)
            ours = key in _INSTALLED and current is _INSTALLED[key]
            if status == EXTENDED:
                original = _JAX_ORIGINAL.get(key) if ours else current
                if original is None:
                    continue
                _JAX_ORIGINAL[key] = original
                new = attr(original)
                new.__name__, new.__qualname__ = name, f"{cls.__name__}.{name}"
                new.__doc__ = (f"JAX's `{name}`, also accepting Paddle's call forms (keepdim=, "
                               f"name=, ...).\n\nJAX's documentation:\n{getattr(original, '__doc__', '')}")
            elif ours or not hasattr(cls, name):
                new = attr
            else:
                continue  # JAX's own attribute: never replaced
            setattr(cls, name, new)
            _INSTALLED[key] = new
    _install_index_check()
    _install_shape()
    _install_conversions()
    _STATUS.clear()
    _STATUS.update({name: status for name, (status, _) in plan.items()
                    if any(_INSTALLED.get((cls, name)) is not None for cls in _array_classes())})
    return registered_methods()


def registered_methods() -> dict[str, str]:
    """Which `paddle.Tensor` names a `jax.Array` has with pdx imported, and how.

    Returns:
      name -> status: 'implemented' (pdx adds it), 'alias' (pdx adds it under Paddle's
      other name for an op), 'extended' (JAX's method, also accepting Paddle's forms),
      'jax' (JAX's own, with Paddle's meaning), 'in-place' (raises naming the functional
      form), 'different' (present but deliberately different: see `differences()`).
      Names absent from the dict are missing. Empty when registration is off.

    Example:
      >>> import pdx
      >>> pdx._tensor.registered_methods()["add_"]
      'in-place'
    """
    if not _STATUS:
        return {}
    out = dict(_STATUS)
    for name in _SAME_AS_JAX:
        out.setdefault(name, JAX)
    for name in _DIFFERENCES:
        if out.get(name) in (None, IMPLEMENTED, JAX):
            out[name] = DIFFERENT
    return dict(sorted(out.items()))


def differences() -> dict[str, str]:
    """Tensor names that are deliberately different from Paddle's: name -> one-line reason.

    Example:
      >>> import pdx
      >>> "dot" in pdx._tensor.differences()
      True
    """
    return dict(_DIFFERENCES)


# --------------------------------------------------------------------------------------
# pdx.Tensor: Paddle's class name over JAX's array types.
# --------------------------------------------------------------------------------------


class _TensorMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, jax.Array)

    def __subclasscheck__(cls, sub) -> bool:
        return isinstance(sub, type) and (issubclass(sub, jax.Array) or issubclass(sub, _TRACER))

    def __call__(cls, data=None, dtype=None, place=None, stop_gradient=True):
        if data is None:
            raise TypeError("pdx.Tensor(data): pass the data (a numpy array, list or number); "
                            "an empty Tensor() has no meaning for an immutable jax.Array. "
                            "Use pdx.to_tensor(data, dtype=...).")
        return sys.modules["pdx"].to_tensor(data, dtype=dtype, place=place, stop_gradient=stop_gradient)

    def __getattr__(cls, name: str):
        # `pdx.Tensor.add(x, y)`: the method of x's own type, concrete or traced.
        if name.startswith("_") or name not in PADDLE_TENSOR_METHODS:
            raise AttributeError(f"type object 'Tensor' has no attribute {name!r}")
        attr = _UNBOUND.get(name)
        if attr is None:
            attr = _UNBOUND[name] = _unbound(name)
        return attr


# name -> what `pdx.Tensor.<name>` gives: a function of the tensor (or a property for
# JAX's and pdx's properties, as `paddle.Tensor.ndim` is a descriptor).
_UNBOUND: dict[str, Any] = {}

# Paddle's names for a Tensor method's first parameter (`paddle.Tensor.lerp(x=a, y=b,
# weight=w)`), read when the tensor is passed by keyword and the pdx op has no signature.
_FIRST_PARAMETER_NAMES = ("x", "input", "self", "arr", "var", "inputs", "condition")


def _first_parameter(name: str) -> str | None:
    """The name of the first parameter of the function behind `Tensor.<name>`."""
    import inspect

    attr = _INSTALLED.get((_array_classes()[0], name))
    target = _resolve_op(*attr._pdx_op) if hasattr(attr, "_pdx_op") else attr
    try:
        params = list(inspect.signature(target).parameters.values())
    except (TypeError, ValueError):
        return None
    if params and params[0].kind in (params[0].POSITIONAL_ONLY, params[0].POSITIONAL_OR_KEYWORD):
        return params[0].name
    return None


def _unbound(name: str):
    concrete = _array_classes()[0]
    if isinstance(getattr(concrete, name, None), property):
        return property(lambda self: getattr(self, name), doc=f"Paddle's `Tensor.{name}` (`x.{name}`).")

    def unbound(*args, **kwargs):
        if args:
            self, args = args[0], args[1:]
        else:
            first = _first_parameter(name)
            keys = (first,) if first in kwargs else tuple(k for k in _FIRST_PARAMETER_NAMES if k in kwargs)
            if not keys:
                raise TypeError(f"pdx.Tensor.{name}(x, ...): pass the tensor first (as `x.{name}(...)` "
                                f"takes it); got only keyword arguments {sorted(kwargs)}")
            self = kwargs.pop(keys[0])
        method = getattr(self, name, None) if isinstance(self, jax.Array) else None
        if method is None:
            installed = _INSTALLED.get((concrete, name))
            if hasattr(installed, "_pdx_op"):  # a pdx op: takes lists, numpy arrays, numbers
                return _resolve_op(*installed._pdx_op)(self, *args, **kwargs)
            method = getattr(jnp.asarray(self), name)
        return method(*args, **kwargs)
    unbound.__name__ = name
    unbound.__qualname__ = f"Tensor.{name}"
    unbound.__doc__ = f"Paddle's unbound `Tensor.{name}(x, ...)`: the same as `x.{name}(...)`."
    return unbound


class Tensor(metaclass=_TensorMeta):
    """Paddle's `paddle.Tensor` name for pdx tensors, which are plain `jax.Array`s.

    `isinstance(x, pdx.Tensor)` is true for every `jax.Array`, traced ones
    included (the same test as `pdx.is_tensor(x)`); numpy arrays and Flax
    Variables are not Tensors. `pdx.Tensor(data, dtype=None)` builds a tensor
    like `pdx.to_tensor(data, dtype)`, and `pdx.Tensor.add(x, y)` calls `x.add(y)` for
    every Tensor method (also `pdx.Tensor.lerp(x=a, y=b, weight=w)`, lists for
    `pdx.Tensor.add_n([a, b])`, numpy input; properties are descriptors:
    `pdx.Tensor.ndim.__get__(x)`).
    No object is ever an instance of this class itself.

    Example:
      >>> import pdx, numpy as np
      >>> x = pdx.Tensor(np.ones(2, "float32"))
      >>> isinstance(x, pdx.Tensor), pdx.Tensor.add(x, x).tolist()
      (True, [2.0, 2.0])
    """
