"""paddle.utils helpers: optional imports, an install check, version requirements, nested structures."""

from __future__ import annotations

import functools
import importlib
import warnings

import jax
import jax.numpy as jnp

__all__ = ["PADDLE_API_VERSION", "deprecated", "flatten", "map_structure", "pack_sequence_as", "require_version",
           "run_check", "try_import"]

PADDLE_API_VERSION = "3.3.0"


def try_import(module_name, err_msg=None):
    """Import an optional dependency, or raise an ImportError saying how to install it.

    Args:
      module_name: a module name such as 'sentencepiece'.
      err_msg: the message to raise instead of the default.

    Returns:
      The module.

    Example:
      >>> from pdx.utils import try_import
      >>> try_import("math").sqrt(4.0)
      2.0
    """
    try:
        return importlib.import_module(module_name)
    except ImportError as e:
        package = module_name.split(".")[0]
        raise ImportError(err_msg or f"{module_name!r} is required here but not installed; "
                                     f"install it with `pip install {package}`") from e


def _version_tuple(text: str, name: str) -> tuple[int, ...]:
    parts = str(text).split(".")
    if not parts or not all(p.isdigit() for p in parts):
        raise ValueError(f"{name}={text!r} must look like '3.0' or '2.6.1'")
    return tuple(int(p) for p in parts)


def require_version(min_version, max_version=None):
    """Check that the Paddle API level pdx implements (3.3.0) lies in [min_version, max_version].

    Args:
      min_version: lowest acceptable version, e.g. '2.0'.
      max_version: highest acceptable version, or None.

    Returns:
      None; raises an Exception naming the versions when outside the range (as Paddle).

    Example:
      >>> from pdx.utils import require_version
      >>> require_version("2.0")
    """
    have = _version_tuple(PADDLE_API_VERSION, "version")
    lo = _version_tuple(min_version, "min_version")
    hi = None if max_version is None else _version_tuple(max_version, "max_version")

    def pad(v):
        return v + (0,) * (4 - len(v))

    if pad(have) < pad(lo) or (hi is not None and pad(have) > pad(hi)):
        wanted = f">= {min_version}" + ("" if hi is None else f" and <= {max_version}")
        raise Exception(f"pdx implements the Paddle {PADDLE_API_VERSION} API; this program needs {wanted}")


def run_check():
    """Check the installation: compile and differentiate a small program on every JAX device, then print.

    Returns:
      None.

    Example:
      >>> from pdx.utils import run_check
      >>> run_check()  # doctest: +SKIP
      pdx works on 1 cpu device(s) ...
    """
    def loss(w, x):
        return jnp.sum(jnp.tanh(x @ w) ** 2)

    step = jax.jit(jax.grad(loss))
    devices = jax.devices()
    for device in devices:
        w = jax.device_put(jnp.ones((4, 3)), device)
        g = step(w, jax.device_put(jnp.ones((2, 4)), device))
        if not bool(jnp.all(jnp.isfinite(g))):
            raise RuntimeError(f"run_check: the test program gave non-finite gradients on {device}")
    kinds = sorted({d.platform for d in devices})
    print(f"pdx works on {len(devices)} {'/'.join(kinds)} device(s) (jax {jax.__version__}). "
          "pdx is installed successfully!")


def flatten(nest):
    """The leaves of a nested list/tuple/dict structure, dicts in sorted-key order.

    Args:
      nest: a nested structure.

    Returns:
      A list of leaves.

    Example:
      >>> from pdx.utils import flatten
      >>> flatten({"b": [1, 2], "a": 3})
      [3, 1, 2]
    """
    return jax.tree_util.tree_leaves(nest, is_leaf=lambda v: v is None)


def pack_sequence_as(structure, flat_sequence):
    """Rebuild `structure` with the leaves taken in order from `flat_sequence`.

    Args:
      structure: a nested structure (the template).
      flat_sequence: as many leaves as `flatten(structure)` has.

    Returns:
      The rebuilt structure.

    Example:
      >>> from pdx.utils import pack_sequence_as
      >>> pack_sequence_as({"b": [0, 0], "a": 0}, [3, 1, 2])
      {'a': 3, 'b': [1, 2]}
    """
    treedef = jax.tree_util.tree_structure(structure, is_leaf=lambda v: v is None)
    flat = list(flat_sequence)
    if len(flat) != treedef.num_leaves:
        raise ValueError(f"pack_sequence_as: the structure has {treedef.num_leaves} leaves but flat_sequence "
                         f"has {len(flat)}")
    return jax.tree_util.tree_unflatten(treedef, flat)


def map_structure(func, *structure):
    """Apply `func` to corresponding leaves of one or more structures of the same shape.

    Args:
      func: called with one leaf from each structure.
      *structure: nested structures.

    Returns:
      A structure of the results.

    Example:
      >>> from pdx.utils import map_structure
      >>> map_structure(lambda a, b: a + b, [1, (2, 3)], [10, (20, 30)])
      [11, (22, 33)]
    """
    return jax.tree_util.tree_map(func, *structure, is_leaf=lambda v: v is None)


def deprecated(update_to="", since="", reason="", level=0):
    """Decorator that warns (level 0/1) or raises (level 2) when a deprecated function is called.

    Args:
      update_to: the replacement API to name.
      since: the version that deprecated it.
      reason: why.
      level: 0 or 1 warns with a DeprecationWarning, 2 raises a RuntimeError.

    Returns:
      A decorator.

    Example:
      >>> from pdx.utils import deprecated
      >>> @deprecated(update_to="new_fn", since="0.1")
      ... def old_fn():
      ...     return 1
    """
    def decorate(func):
        message = f"{func.__name__} is deprecated" + (f" since {since}" if since else "") + \
            (f"; use {update_to} instead" if update_to else "") + (f". Reason: {reason}" if reason else "")

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            if level >= 2:
                raise RuntimeError(message)
            warnings.warn(message, DeprecationWarning, stacklevel=2)
            return func(*args, **kwargs)

        return wrapper

    return decorate
