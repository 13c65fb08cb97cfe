"""Sparse convolution and max pooling over channels-last COO tensors (Paddle's NDHWC / NHWC).

Input: a hybrid COO tensor `[N, *spatial, C]` with sparse dims `N, *spatial`
and values `[nnz, C]`. The math runs on the densified tensor with
`lax.conv_general_dilated` / `lax.reduce_window`, then reads the output at
Paddle's output sites:

- conv: every site whose receptive field holds an input site;
- subm_conv (submanifold): exactly the input sites (stride 1);
- max_pool: every site whose window holds an input site; the max is over the
  stored inputs only (implicit zeros take no part).

Densifying costs memory proportional to the full grid: fine for the small
and medium grids this is meant for; a gather-scatter rulebook would scale
to large, very sparse scenes.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from pdx._args import as_array, op_error
from pdx.sparse._core import BCOO, as_coo, concrete, require_sparse

__all__ = ["conv2d", "conv3d", "max_pool3d", "subm_conv2d", "subm_conv3d"]


def _tuple(value, n: int, name: str, op: str) -> tuple[int, ...]:
    if isinstance(value, (int, np.integer)):
        return (int(value),) * n
    items = tuple(int(v) for v in value)
    if len(items) != n:
        raise op_error(f"sparse.nn.functional.{op}", f"`{name}` must be an int or {n} ints; got {value!r}")
    return items


def _padding(padding, n: int, op: str):
    if isinstance(padding, str):
        if padding.upper() not in ("SAME", "VALID"):
            raise op_error(f"sparse.nn.functional.{op}", f"`padding` must be 'same', 'valid', ints or pairs; got {padding!r}")
        return padding.upper()
    if isinstance(padding, (int, np.integer)):
        return [(int(padding), int(padding))] * n
    items = list(padding)
    if len(items) == n and all(isinstance(p, (int, np.integer)) for p in items):
        return [(int(p), int(p)) for p in items]
    if len(items) == 2 * n:
        return [(int(items[2 * i]), int(items[2 * i + 1])) for i in range(n)]
    if len(items) == n:
        return [tuple(int(v) for v in p) for p in items]
    raise op_error(f"sparse.nn.functional.{op}", f"`padding` must be an int, {n} ints, {2 * n} ints or {n} pairs; got {padding!r}")


def _check_input(x, n: int, op: str) -> BCOO:
    require_sparse(x, f"nn.functional.{op}")
    c = as_coo(x, f"nn.functional.{op}")
    if c.ndim != n + 2 or c.n_sparse != n + 1:
        raise op_error(f"sparse.nn.functional.{op}", f"`x` must be a COO tensor [N, {'D, ' if n == 3 else ''}H, W, C] "
                                                     f"with {n + 1} sparse dims and values [nnz, C]; got shape "
                                                     f"{list(c.shape)} with {c.n_sparse} sparse dims "
                                                     "(use to_sparse_coo(x, sparse_dim=ndim - 1))")
    return c


def _sites(mask, values) -> BCOO:
    """A hybrid COO with the given values at the True sites of `mask` ([N, *spatial])."""
    if concrete(mask):
        pos = np.nonzero(np.asarray(mask))
        idx = jnp.asarray(np.stack(pos, axis=1), jnp.int32)
        return BCOO((values[tuple(jnp.asarray(p, jnp.int32) for p in pos)], idx), shape=values.shape)
    nse = int(np.prod(mask.shape))
    pos = jnp.nonzero(mask, size=nse, fill_value=tuple(mask.shape))
    vals = values[tuple(jnp.minimum(p, s - 1) for p, s in zip(pos, mask.shape))]
    return BCOO((vals, jnp.stack(pos, axis=1).astype(jnp.int32)), shape=values.shape)


def _conv(x, weight, bias, stride, padding, dilation, groups, data_format, n, subm, op):
    expected = "NDHWC" if n == 3 else "NHWC"
    if data_format != expected:
        raise op_error(f"sparse.nn.functional.{op}", f"`data_format` must be {expected!r} (as in Paddle); got {data_format!r}")
    if groups != 1:
        raise op_error(f"sparse.nn.functional.{op}", f"`groups` must be 1 (as in Paddle); got {groups!r}")
    c = _check_input(x, n, op)
    w = as_array(weight, name="weight", op=f"sparse.nn.functional.{op}")
    if w.ndim != n + 2 or w.shape[-2] != c.shape[-1]:
        raise op_error(f"sparse.nn.functional.{op}", f"`weight` must be [{'kD, ' if n == 3 else ''}kH, kW, C_in, C_out] "
                                                     f"with C_in={c.shape[-1]}; got {list(w.shape)}")
    stride = _tuple(stride, n, "stride", op)
    dilation = _tuple(dilation, n, "dilation", op)
    pad = _padding(padding, n, op)
    if subm and stride != (1,) * n:
        raise op_error(f"sparse.nn.functional.{op}", f"submanifold convolution keeps the input sites, so `stride` must be 1; got {stride}")
    spatial = "DHW"[3 - n:]
    dn = ("N" + spatial + "C", spatial + "IO", "N" + spatial + "C")
    dense = c.todense()
    out = jax.lax.conv_general_dilated(dense, w.astype(dense.dtype), stride, pad, rhs_dilation=dilation,
                                       dimension_numbers=dn)
    if bias is not None:
        out = out + as_array(bias, name="bias", op=f"sparse.nn.functional.{op}")
    if subm:
        if out.shape[1:-1] != c.shape[1:-1]:
            raise op_error(f"sparse.nn.functional.{op}", f"submanifold convolution must keep the spatial shape "
                                                         f"{list(c.shape[1:-1])}; padding {padding!r} gives {list(out.shape[1:-1])}")
        coords = tuple(jnp.minimum(c.indices[:, d], c.shape[d] - 1) for d in range(n + 1))
        return BCOO((out[coords], c.indices), shape=out.shape)
    active = BCOO((jnp.ones((c.nse, 1), dense.dtype), c.indices), shape=c.shape[:-1] + (1,)).todense()
    reach = jax.lax.conv_general_dilated(active, jnp.ones(w.shape[:-2] + (1, 1), dense.dtype), stride, pad,
                                         rhs_dilation=dilation, dimension_numbers=dn)[..., 0] > 0
    return _sites(reach, out)


def conv3d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, data_format="NDHWC", name=None):
    """Sparse 3-D convolution: output at every site whose receptive field holds an input site.

    Args:
      x: COO `[N, D, H, W, C_in]` (sparse dims N, D, H, W; values `[nnz, C_in]`).
      weight: `[kD, kH, kW, C_in, C_out]` (Paddle's sparse layout).
      bias: `[C_out]` or None.
      stride, padding, dilation: ints or 3 ints (padding also 6 ints, pairs, 'same'/'valid').

    Returns:
      COO `[N, D', H', W', C_out]` with values `[nnz_out, C_out]`.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> x = pdx.sparse.to_sparse_coo(jnp.zeros((1, 3, 3, 3, 1)).at[0, 1, 1, 1, 0].set(1.0), 4)
        >>> y = pdx.sparse.nn.functional.conv3d(x, jnp.ones((3, 3, 3, 1, 2)), padding=1)
        >>> pdx.sparse.nnz(y)
        27
    """
    return _conv(x, weight, bias, stride, padding, dilation, groups, data_format, 3, False, "conv3d")


def subm_conv3d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, data_format="NDHWC", key=None,
                name=None):
    """Submanifold sparse 3-D convolution: output only at the input sites (same spatial shape).

    Arguments as in `conv3d`; stride must be 1 and padding must keep the
    spatial shape. `key` (Paddle's rulebook cache key) is accepted and unused.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> x = pdx.sparse.to_sparse_coo(jnp.zeros((1, 3, 3, 3, 1)).at[0, 1, 1, 1, 0].set(1.0), 4)
        >>> y = pdx.sparse.nn.functional.subm_conv3d(x, jnp.ones((3, 3, 3, 1, 2)), padding=1)
        >>> pdx.sparse.values(y).tolist()
        [[1.0, 1.0]]
    """
    return _conv(x, weight, bias, stride, padding, dilation, groups, data_format, 3, True, "subm_conv3d")


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, data_format="NHWC", name=None):
    """Sparse 2-D convolution over COO `[N, H, W, C_in]` with weight `[kH, kW, C_in, C_out]` (see `conv3d`).

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> x = pdx.sparse.to_sparse_coo(jnp.zeros((1, 3, 3, 1)).at[0, 1, 1, 0].set(1.0), 3)
        >>> pdx.sparse.nnz(pdx.sparse.nn.functional.conv2d(x, jnp.ones((3, 3, 1, 1)), padding=1))
        9
    """
    return _conv(x, weight, bias, stride, padding, dilation, groups, data_format, 2, False, "conv2d")


def subm_conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, data_format="NHWC", key=None,
                name=None):
    """Submanifold sparse 2-D convolution: output only at the input sites (see `subm_conv3d`).

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> x = pdx.sparse.to_sparse_coo(jnp.zeros((1, 3, 3, 1)).at[0, 1, 1, 0].set(1.0), 3)
        >>> pdx.sparse.nnz(pdx.sparse.nn.functional.subm_conv2d(x, jnp.ones((3, 3, 1, 1)), padding=1))
        1
    """
    return _conv(x, weight, bias, stride, padding, dilation, groups, data_format, 2, True, "subm_conv2d")


def max_pool3d(x, kernel_size, stride=None, padding=0, ceil_mode=False, data_format="NDHWC", name=None):
    """Sparse 3-D max pooling over the stored sites (implicit zeros take no part).

    Args:
      x: COO `[N, D, H, W, C]` with values `[nnz, C]`.
      kernel_size, stride (default kernel_size), padding: ints or 3 ints.
      ceil_mode: must be False (as in Paddle's sparse pooling).

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> x = pdx.sparse.to_sparse_coo(jnp.zeros((1, 2, 2, 2, 1)).at[0, 1, 1, 1, 0].set(-3.0), 4)
        >>> pdx.sparse.values(pdx.sparse.nn.functional.max_pool3d(x, 2)).tolist()
        [[-3.0]]
    """
    op = "max_pool3d"
    if data_format != "NDHWC":
        raise op_error(f"sparse.nn.functional.{op}", f"`data_format` must be 'NDHWC'; got {data_format!r}")
    if ceil_mode:
        raise op_error(f"sparse.nn.functional.{op}", "`ceil_mode` must be False (as in Paddle's sparse max_pool3d)")
    c = _check_input(x, 3, op)
    k = _tuple(kernel_size, 3, "kernel_size", op)
    s = k if stride is None else _tuple(stride, 3, "stride", op)
    pad = _padding(padding, 3, op)
    dense = c.todense()
    active = BCOO((jnp.ones((c.nse,), jnp.int8), c.indices), shape=c.shape[:-1]).todense() > 0
    filled = jnp.where(active[..., None], dense, -jnp.inf)
    window, strides = (1,) + k + (1,), (1,) + s + (1,)
    pads = pad if isinstance(pad, str) else [(0, 0)] + list(pad) + [(0, 0)]
    out = jax.lax.reduce_window(filled, -jnp.inf, jax.lax.max, window, strides, pads)
    reach = jax.lax.reduce_window(active.astype(jnp.float32)[..., None], 0.0, jax.lax.max, window, strides,
                                  pads)[..., 0] > 0
    return _sites(reach, jnp.where(jnp.isfinite(out), out, 0.0).astype(dense.dtype))

