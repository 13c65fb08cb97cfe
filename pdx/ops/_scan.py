"""Scans, differences, integrals, histograms and bucketing.

`bincount` is eager-only unless `minlength` covers every value (its output
length depends on the data); everything else works under jit.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from pdx._dtype import default_float, default_int
from pdx.ops._checks import broadcast_shapes, check_rank, dtype_arg, int_dtype_arg, int_list, static_int
from pdx.ops._common import as_array, normalize_axis, op_error
from pdx.ops._logic import searchsorted, sort


def _float(x):
    return x if jnp.issubdtype(x.dtype, jnp.inexact) else x.astype(default_float())


def _scan_axis(x, axis, op):
    if axis is None:
        return x.reshape(-1), 0
    x1 = x.reshape(1) if x.ndim == 0 else x
    return x1, normalize_axis(static_int(axis, op=op, name="axis"), x1.ndim, op=op)


@functools.partial(jax.jit, static_argnames=("ax", "largest"))
def _cum_extreme(x, ax, largest):
    idx = jax.lax.broadcasted_iota(jnp.int32, x.shape, ax)

    def pick(a, b):
        (va, ia), (vb, ib) = a, b
        take_b = (vb >= va) if largest else (vb <= va)
        take_b = take_b | jnp.isnan(vb)
        take_b = take_b & ~(jnp.isnan(va) & ~jnp.isnan(vb))
        return jnp.where(take_b, vb, va), jnp.where(take_b, ib, ia)

    _, i = jax.lax.associative_scan(pick, (x, idx), axis=ax)
    return jnp.take_along_axis(x, i, ax), i


def _cum(op, x, axis, dtype, largest):
    x = as_array(x, op=op)
    dt = int_dtype_arg(dtype, op=op)
    x1, ax = _scan_axis(x, axis, op)
    v, i = _cum_extreme(x1, ax, largest)
    if x.ndim == 0 and axis is not None:
        v, i = v.reshape(()), i.reshape(())
    return v, i.astype(dt)


def cummax(x, axis=None, dtype="int64", name=None):
    """Running maximum along `axis` (flattened when None) and the index where it was reached.

    Args:
      x: a tensor.
      axis: int or None.
      dtype: index dtype, 'int32' or 'int64' (int32 without x64).
      name: ignored.

    Returns:
      `(values, indices)`; ties take the later index, as Paddle.

    Example:
      >>> import pdx
      >>> [t.tolist() for t in pdx.cummax(pdx.to_tensor([1.0, 3.0, 2.0, 3.0]))]
      [[1.0, 3.0, 3.0, 3.0], [0, 1, 1, 3]]
    """
    return _cum("cummax", x, axis, dtype, largest=True)


def cummin(x, axis=None, dtype="int64", name=None):
    """Running minimum along `axis` (flattened when None) and the index where it was reached.

    Args:
      x: a tensor.
      axis: int or None.
      dtype: index dtype, 'int32' or 'int64' (int32 without x64).
      name: ignored.

    Returns:
      `(values, indices)`; ties take the later index.

    Example:
      >>> import pdx
      >>> [t.tolist() for t in pdx.cummin(pdx.to_tensor([3.0, 1.0, 2.0]))]
      [[3.0, 1.0, 1.0], [0, 1, 1]]
    """
    return _cum("cummin", x, axis, dtype, largest=False)


def logcumsumexp(x, axis=None, dtype=None, name=None):
    """Running `log(sum(exp(x)))` along `axis` (flattened when None), computed stably.

    Args:
      x: a floating tensor.
      axis: int or None.
      dtype: optional output dtype.
      name: ignored.

    Returns:
      A floating tensor.

    Example:
      >>> import pdx
      >>> [round(v, 4) for v in pdx.logcumsumexp(pdx.to_tensor([0.0, 0.0])).tolist()]
      [0.0, 0.6931]
    """
    x = as_array(x, op="logcumsumexp")
    dt = dtype_arg(dtype, op="logcumsumexp")
    x = _float(x if dt is None else x.astype(dt))
    x1, ax = _scan_axis(x, axis, "logcumsumexp")
    out = jax.lax.cumlogsumexp(x1, axis=ax)
    return out.reshape(()) if x.ndim == 0 and axis is not None else out


def diff(x, n=1, axis=-1, prepend=None, append=None, name=None):
    """The n-th forward difference along `axis` (`x[i+1] - x[i]`; XOR for bool).

    Args:
      x: a tensor of rank >= 1.
      n: how many times to difference.
      axis: the axis.
      prepend: values joined before `x` along `axis` first.
      append: values joined after `x` along `axis` first.
      name: ignored.

    Returns:
      A tensor `n` shorter along `axis` (plus the joined lengths).

    Example:
      >>> import pdx
      >>> pdx.diff(pdx.to_tensor([1, 4, 9])).tolist()
      [3, 5]
    """
    x = as_array(x, op="diff")
    check_rank(x, op="diff", at_least=1)
    ax = normalize_axis(static_int(axis, op="diff", name="axis"), x.ndim, op="diff")
    n = static_int(n, op="diff", name="n")
    if n < 0:
        raise op_error("diff", f"`n`={n} must be >= 0")
    pre = None if prepend is None else as_array(prepend, name="prepend", op="diff")
    post = None if append is None else as_array(append, name="append", op="diff")
    return jnp.diff(x, n=n, axis=ax, prepend=pre, append=post)


def _spacing(y, x, dx, ax, op):
    if x is not None and dx is not None:
        raise op_error(op, "pass either `x` (sample points) or `dx` (spacing), not both")
    if x is None:
        return 1.0 if dx is None else dx
    x = _float(as_array(x, name="x", op=op))
    if x.ndim == 1:
        if x.shape[0] != y.shape[ax]:
            raise op_error(op, f"1-D x.shape={tuple(x.shape)} must match y.shape[{ax}]={y.shape[ax]}")
        return jnp.diff(x).reshape([-1 if i == ax else 1 for i in range(y.ndim)])
    broadcast_shapes(op, y=y, x=x)
    return jnp.diff(x, axis=ax)


def _trapezoid_terms(op, y, x, dx, axis):
    y = _float(as_array(y, name="y", op=op))
    check_rank(y, op=op, name="y", at_least=1)
    ax = normalize_axis(static_int(axis, op=op, name="axis"), y.ndim, op=op)
    d = _spacing(y, x, dx, ax, op)
    mid = (jax.lax.slice_in_dim(y, 1, None, axis=ax) + jax.lax.slice_in_dim(y, 0, -1, axis=ax)) / 2
    return (d * mid).astype(y.dtype), ax


def trapezoid(y, x=None, dx=None, axis=-1, name=None):
    """Integral of `y` along `axis` by the trapezoid rule.

    Args:
      y: sampled values.
      x: optional sample points (1-D along `axis`, or broadcastable with `y`).
      dx: constant spacing when `x` is None (default 1).
      axis: the axis to integrate.
      name: ignored.

    Returns:
      A tensor without `axis`.

    Example:
      >>> import pdx
      >>> pdx.trapezoid(pdx.to_tensor([1.0, 2.0, 3.0])).tolist()
      4.0
    """
    terms, ax = _trapezoid_terms("trapezoid", y, x, dx, axis)
    return jnp.sum(terms, axis=ax)


def cumulative_trapezoid(y, x=None, dx=None, axis=-1, name=None):
    """Running trapezoid-rule integral of `y` along `axis`.

    Args:
      y: sampled values.
      x: optional sample points.
      dx: constant spacing when `x` is None (default 1).
      axis: the axis to integrate.
      name: ignored.

    Returns:
      A tensor one shorter along `axis`.

    Example:
      >>> import pdx
      >>> pdx.cumulative_trapezoid(pdx.to_tensor([1.0, 2.0, 3.0])).tolist()
      [1.5, 4.0]
    """
    terms, ax = _trapezoid_terms("cumulative_trapezoid", y, x, dx, axis)
    return jnp.cumsum(terms, axis=ax)


def _hist_range(x, bins, min, max, op):  # noqa: A002 (Paddle's names)
    bins = static_int(bins, op=op, name="bins")
    if bins < 1:
        raise op_error(op, f"`bins`={bins} must be >= 1")
    if min > max:
        raise op_error(op, f"`min`={min} must be <= `max`={max}")
    if min == 0 and max == 0:
        lo, hi = jnp.min(x).astype(x.dtype), jnp.max(x).astype(x.dtype)
    else:
        lo, hi = jnp.asarray(min, x.dtype), jnp.asarray(max, x.dtype)
    same = lo == hi
    return bins, jnp.where(same, lo - 1, lo), jnp.where(same, hi + 1, hi)


def histogram_bin_edges(input, bins=100, min=0.0, max=0.0, name=None):  # noqa: A002
    """The `bins + 1` edges `histogram` uses (data range when min == max == 0).

    Args:
      input: a tensor.
      bins: number of equal-width bins.
      min: lower edge.
      max: upper edge.
      name: ignored.

    Returns:
      A 1-D floating tensor.

    Example:
      >>> import pdx
      >>> pdx.histogram_bin_edges(pdx.to_tensor([0.0, 1.0]), bins=2).tolist()
      [0.0, 0.5, 1.0]
    """
    x = _float(as_array(input, name="input", op="histogram_bin_edges"))
    bins, lo, hi = _hist_range(x, bins, min, max, "histogram_bin_edges")
    return jnp.linspace(lo, hi, bins + 1, dtype=x.dtype)


def histogram(input, bins=100, min=0.0, max=0.0, weight=None, density=False, name=None):  # noqa: A002
    """Counts of `input` in `bins` equal-width bins over [min, max] (data range when both are 0).

    Values outside the range are ignored; the last bin includes `max`.

    Args:
      input: a tensor (flattened).
      bins: number of bins.
      min: lower edge.
      max: upper edge.
      weight: optional weights like `input` (sums weights instead of counting).
      density: normalize so the histogram integrates to 1.
      name: ignored.

    Returns:
      A 1-D tensor: int64 counts (int32 without x64), or floating with weights/density.

    Example:
      >>> import pdx
      >>> pdx.histogram(pdx.to_tensor([1.0, 2.0, 1.0]), bins=2, min=0, max=2).tolist()
      [0, 3]
    """
    x = as_array(input, name="input", op="histogram")
    xf = _float(x).reshape(-1)
    bins, lo, hi = _hist_range(xf, bins, min, max, "histogram")
    w = None
    if weight is not None:
        w = as_array(weight, name="weight", op="histogram")
        if w.shape != x.shape:
            raise op_error("histogram", f"weight.shape={tuple(w.shape)} must equal input.shape={tuple(x.shape)}")
        w = w.reshape(-1)
    pos = jnp.floor((xf - lo) / (hi - lo) * bins).astype(jnp.int32)
    pos = jnp.where(xf == hi, bins - 1, pos)
    inside = (xf >= lo) & (xf <= hi)
    ones = jnp.ones_like(xf) if w is None else w
    counts = jnp.zeros(bins, ones.dtype).at[jnp.where(inside, pos, bins)].add(ones, mode="drop")
    if density:
        counts = _float(counts)
        return counts / (jnp.sum(counts) * (hi - lo) / bins)
    return counts.astype(default_int()) if w is None else counts


def histogramdd(x, bins=10, ranges=None, density=False, weights=None, name=None):
    """Multi-dimensional histogram of the points in the last dim of `x`.

    Args:
      x: a `[..., D]` tensor of points.
      bins: an int, a list of D ints, or a list of D 1-D edge tensors.
      ranges: optional flat list `[lo0, hi0, lo1, hi1, ...]`.
      density: normalize to a density.
      weights: optional `[...]` weights, one per point.
      name: ignored.

    Returns:
      `(hist, edges)`: a D-dim floating tensor and a list of D edge tensors.

    Example:
      >>> import pdx
      >>> h, e = pdx.histogramdd(pdx.to_tensor([[0.0, 0.0], [1.0, 1.0]]), bins=2)
      >>> h.tolist()
      [[1.0, 0.0], [0.0, 1.0]]
    """
    x = _float(as_array(x, op="histogramdd"))
    check_rank(x, op="histogramdd", at_least=2)
    d = x.shape[-1]
    pts = x.reshape(-1, d)
    if ranges is not None:
        r = [float(v) for v in ranges]
        if len(r) != 2 * d:
            raise op_error("histogramdd", f"`ranges` needs 2 * {d} numbers; got {len(r)}")
        rng = [(r[2 * i], r[2 * i + 1]) for i in range(d)]
    else:
        rng = None
    if isinstance(bins, (list, tuple)) and bins and not isinstance(bins[0], (int, np.integer)):
        bins = [as_array(b, name="bins", op="histogramdd") for b in bins]
    elif not isinstance(bins, (int, np.integer)):
        bins = int_list(bins, op="histogramdd", name="bins")
    w = None if weights is None else as_array(weights, name="weights", op="histogramdd").reshape(-1)
    hist, edges = jnp.histogramdd(pts, bins=bins, range=rng, weights=w, density=density)
    return hist.astype(x.dtype), [e.astype(x.dtype) for e in edges]


def bincount(x, weights=None, minlength=0, name=None):
    """Count occurrences of each non-negative integer in 1-D `x`.

    Eager-only (the output length `max(x) + 1` depends on the data).

    Args:
      x: a 1-D non-negative integer tensor.
      weights: optional weights like `x`.
      minlength: minimum output length.
      name: ignored.

    Returns:
      A 1-D tensor: int64 counts (int32 without x64), or the weights' dtype.

    Example:
      >>> import pdx
      >>> pdx.bincount(pdx.to_tensor([1, 1, 3])).tolist()
      [0, 2, 0, 1]
    """
    x = as_array(x, op="bincount")
    if x.ndim != 1 or not jnp.issubdtype(x.dtype, jnp.integer):
        raise op_error("bincount", f"`x` must be a 1-D integer tensor; got shape {tuple(x.shape)}, dtype {x.dtype}")
    minlength = static_int(minlength, op="bincount", name="minlength")
    if minlength < 0:
        raise op_error("bincount", f"`minlength`={minlength} must be >= 0")
    if isinstance(x, jax.core.Tracer):
        raise op_error("bincount", "the output length depends on the data, so it cannot run under jit; "
                                   "use jnp.bincount(x, length=N) with a fixed N there")
    xs = np.asarray(x)
    if xs.size and xs.min() < 0:
        raise op_error("bincount", f"`x` must be non-negative; got min {xs.min()}")
    length = max(minlength, int(xs.max()) + 1 if xs.size else 0)
    w = None
    if weights is not None:
        w = as_array(weights, name="weights", op="bincount")
        if w.shape != x.shape:
            raise op_error("bincount", f"weights.shape={tuple(w.shape)} must equal x.shape={tuple(x.shape)}")
    out = jnp.bincount(x, weights=w, length=length)
    return out.astype(default_int()) if w is None else out.astype(
        w.dtype if jnp.issubdtype(w.dtype, jnp.inexact) else default_float())



def bucketize(x, sorted_sequence, out_int32=False, right=False, name=None):
    """Index of the bucket of each element of `x` in the 1-D `sorted_sequence`.

    Args:
      x: a tensor.
      sorted_sequence: a sorted 1-D tensor of boundaries.
      out_int32: return int32 instead of int64.
      right: False gives the first index `i` with `x <= seq[i]`; True with `x < seq[i]`.
      name: ignored.

    Returns:
      An integer tensor like `x`.

    Example:
      >>> import pdx
      >>> pdx.bucketize(pdx.to_tensor([1.0, 2.5]), pdx.to_tensor([0.0, 2.0, 3.0])).tolist()
      [1, 2]
    """
    seq = as_array(sorted_sequence, name="sorted_sequence", op="bucketize")
    if seq.ndim != 1:
        raise op_error("bucketize", f"`sorted_sequence` must be 1-D; got shape {tuple(seq.shape)}")
    return searchsorted(seq, x, out_int32=out_int32, right=right)


def msort(input):  # noqa: A002 (Paddle's name)
    """Sort along the first axis.

    Args:
      input: a tensor.

    Returns:
      The sorted tensor.

    Example:
      >>> import pdx
      >>> pdx.msort(pdx.to_tensor([[2, 1], [1, 3]])).tolist()
      [[1, 1], [2, 3]]
    """
    return sort(input, axis=0)


def reduce_as(x, target, name=None):
    """Sum `x` down to `target.shape` (the reverse of broadcasting `target` to `x`).

    Args:
      x: a tensor.
      target: a tensor whose shape broadcasts to `x.shape`.
      name: ignored.

    Returns:
      A tensor of `target.shape`.

    Example:
      >>> import pdx
      >>> pdx.reduce_as(pdx.ones([2, 3]), pdx.zeros([3])).tolist()
      [2.0, 2.0, 2.0]
    """
    x = as_array(x, op="reduce_as")
    shape = tuple(as_array(target, name="target", op="reduce_as").shape)
    lead = x.ndim - len(shape)
    if lead < 0 or any(t not in (1, s) for t, s in zip(shape, x.shape[lead:])):
        raise op_error("reduce_as", f"target.shape={shape} does not broadcast to x.shape={tuple(x.shape)}")
    axes = tuple(range(lead)) + tuple(lead + i for i, t in enumerate(shape) if t == 1 and x.shape[lead + i] != 1)
    return jnp.sum(x, axis=axes).reshape(shape) if axes else x.reshape(shape)


def unique_consecutive(x, return_inverse=False, return_counts=False, axis=None, dtype="int64", name=None):
    """Collapse runs of equal consecutive elements (or slices along `axis`) to one (eager only).

    The output size depends on the data, so this runs on concrete values only.

    Args:
      x: a tensor.
      return_inverse: also return, per element (slice), the index of its run.
      return_counts: also return the length of each run.
      axis: None (flatten first) or the axis whose slices are compared.
      dtype: dtype of the index outputs ('int64' -> int32 without x64, or 'int32').
      name: ignored.

    Returns:
      The collapsed tensor, or `(out, [inverse], [counts])` with the requested extras.

    Example:
      >>> import pdx
      >>> pdx.unique_consecutive(pdx.to_tensor([1, 1, 2, 2, 1])).tolist()
      [1, 2, 1]
    """
    x = as_array(x, op="unique_consecutive")
    dt = int_dtype_arg(dtype, op="unique_consecutive")
    if isinstance(x, jax.core.Tracer):
        raise op_error("unique_consecutive", "the output size depends on the data, so it cannot run under jit")
    xs = np.asarray(x).reshape(-1) if axis is None else np.asarray(x)
    ax = 0 if axis is None else normalize_axis(static_int(axis, op="unique_consecutive", name="axis"), xs.ndim,
                                              op="unique_consecutive")
    moved = np.moveaxis(xs, ax, 0).reshape(xs.shape[ax], -1)
    starts = np.ones(moved.shape[0], bool)
    starts[1:] = np.any(moved[1:] != moved[:-1], axis=1)
    out = jnp.asarray(np.compress(starts, xs, axis=ax), x.dtype)
    extras = []
    if return_inverse:
        extras.append(jnp.asarray(np.cumsum(starts) - 1, dt))
    if return_counts:
        extras.append(jnp.asarray(np.diff(np.append(np.flatnonzero(starts), moved.shape[0])), dt))
    return (out, *extras) if extras else out
