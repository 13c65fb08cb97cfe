"""More shape ops: axis moves, views, crops, windows and broadcasting.

Every op here is static in shape (sizes come from Python ints and array
shapes), so all of them work under jit.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from pdx.ops._checks import check_rank, dtype_arg, int_list, static_int
from pdx.ops._common import as_array, normalize_axis, op_error, shape_list
from pdx.ops._manipulation import _tensor_list, concat, flip, reshape, take_along_axis, transpose

# Paddle's aliases are the same functions.
cat = concatenate = concat
reverse = flip
take_along_dim = take_along_axis


def _axis(axis, ndim, op, name="axis"):
    return normalize_axis(static_int(axis, op=op, name=name), ndim, op=op, name=name)


def permute(input, dims):  # noqa: A002 (Paddle's name)
    """Permute the dims of `input` (alias of `transpose` with torch-style names).

    Args:
      input: a tensor.
      dims: a permutation of range(input.ndim).

    Returns:
      The permuted tensor.

    Example:
      >>> import pdx
      >>> pdx.permute(pdx.zeros([2, 3, 4]), [2, 0, 1]).shape
      (4, 2, 3)
    """
    return transpose(input, dims)


def _swap_perm(ndim, a, b, op):
    perm = list(range(ndim))
    a, b = normalize_axis(a, ndim, op=op, name="axis0"), normalize_axis(b, ndim, op=op, name="axis1")
    perm[a], perm[b] = perm[b], perm[a]
    return perm


def swapaxes(x, perm, name=None):
    """Swap two axes (`swapaxes(x, 0, 1)`) or apply a full permutation (`swapaxes(x, [1, 0])`).

    Args:
      x: a tensor.
      perm: a permutation list, or the first axis when a second int follows.
      name: the second axis when `perm` is an int (Paddle's two-int form); else ignored.

    Returns:
      The transposed tensor.

    Example:
      >>> import pdx
      >>> pdx.swapaxes(pdx.zeros([2, 3, 4]), 0, 2).shape
      (4, 3, 2)
    """
    x = as_array(x, op="swapaxes")
    if isinstance(perm, (int, np.integer)) and isinstance(name, (int, np.integer)):
        return jnp.transpose(x, _swap_perm(x.ndim, int(perm), int(name), "swapaxes"))
    return transpose(x, perm)


def swapdims(x, perm, name=None):
    """Alias of `swapaxes`: `swapdims(x, 0, 1)` or `swapdims(x, [1, 0])`.

    Args:
      x: a tensor.
      perm: a permutation list, or the first axis when a second int follows.
      name: the second axis when `perm` is an int; else ignored.

    Returns:
      The transposed tensor.

    Example:
      >>> import pdx
      >>> pdx.swapdims(pdx.zeros([2, 3]), 0, 1).shape
      (3, 2)
    """
    return swapaxes(x, perm, name)


def moveaxis(x, source, destination, name=None):
    """Move axes `source` to positions `destination` (others keep their order).

    Args:
      x: a tensor.
      source: int or list of ints.
      destination: int or list of ints, as many as `source`.
      name: ignored.

    Returns:
      The transposed tensor.

    Example:
      >>> import pdx
      >>> pdx.moveaxis(pdx.zeros([2, 3, 4]), 0, -1).shape
      (3, 4, 2)
    """
    x = as_array(x, op="moveaxis")
    src = [normalize_axis(a, x.ndim, op="moveaxis", name="source")
           for a in int_list(source, op="moveaxis", name="source")]
    dst = [normalize_axis(a, x.ndim, op="moveaxis", name="destination")
           for a in int_list(destination, op="moveaxis", name="destination")]
    if len(src) != len(dst) or len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise op_error("moveaxis", f"`source`={source} and `destination`={destination} must list the "
                                   "same number of distinct axes")
    return jnp.moveaxis(x, src, dst)


def t(input, name=None):  # noqa: A002 (Paddle's name)
    """Transpose a tensor of rank <= 2 (0-D and 1-D tensors are returned unchanged).

    Args:
      input: a tensor of rank <= 2.
      name: ignored.

    Returns:
      The transposed tensor.

    Example:
      >>> import pdx
      >>> pdx.t(pdx.zeros([2, 3])).shape
      (3, 2)
    """
    x = as_array(input, name="input", op="t")
    if x.ndim > 2:
        raise op_error("t", f"`input` must have rank <= 2; got input.shape={tuple(x.shape)}; use pdx.transpose")
    return x.T


def matrix_transpose(x, name=None):
    """Swap the last two dims.

    Args:
      x: a tensor of rank >= 2.
      name: ignored.

    Returns:
      The transposed tensor.

    Example:
      >>> import pdx
      >>> pdx.matrix_transpose(pdx.zeros([5, 2, 3])).shape
      (5, 3, 2)
    """
    x = as_array(x, op="matrix_transpose")
    check_rank(x, op="matrix_transpose", at_least=2)
    return jnp.swapaxes(x, -1, -2)


def ravel(input):  # noqa: A002 (Paddle's name)
    """Flatten to 1-D.

    Args:
      input: a tensor.

    Returns:
      A 1-D tensor.

    Example:
      >>> import pdx
      >>> pdx.ravel(pdx.zeros([2, 3])).shape
      (6,)
    """
    return as_array(input, name="input", op="ravel").reshape(-1)


def rot90(x, k=1, axes=[0, 1], name=None):  # noqa: B006 (Paddle's default)
    """Rotate by 90 degrees `k` times in the plane of `axes` (from the first toward the second).

    Args:
      x: a tensor of rank >= 2.
      k: number of rotations (negative rotates the other way).
      axes: two distinct axes.
      name: ignored.

    Returns:
      The rotated tensor.

    Example:
      >>> import pdx
      >>> pdx.rot90(pdx.to_tensor([[1, 2], [3, 4]])).tolist()
      [[2, 4], [1, 3]]
    """
    x = as_array(x, op="rot90")
    check_rank(x, op="rot90", at_least=2)
    ax = [normalize_axis(a, x.ndim, op="rot90", name="axes") for a in int_list(axes, op="rot90", name="axes")]
    if len(ax) != 2 or ax[0] == ax[1]:
        raise op_error("rot90", f"`axes`={axes} must name two distinct axes")
    return jnp.rot90(x, static_int(k, op="rot90", name="k"), axes=tuple(ax))


def unflatten(x, axis, shape, name=None):
    """Expand dim `axis` into `shape` (one -1 is inferred).

    Args:
      x: a tensor.
      axis: the dim to expand.
      shape: list/tuple of ints whose product is `x.shape[axis]`.
      name: ignored.

    Returns:
      The reshaped tensor.

    Example:
      >>> import pdx
      >>> pdx.unflatten(pdx.zeros([2, 6]), 1, [2, 3]).shape
      (2, 2, 3)
    """
    x = as_array(x, op="unflatten")
    ax = _axis(axis, x.ndim, "unflatten")
    dims = list(shape_list(shape, op="unflatten"))
    known = int(np.prod([d for d in dims if d != -1]))
    if dims.count(-1) == 1 and known and x.shape[ax] % known == 0:
        dims[dims.index(-1)] = x.shape[ax] // known
    if dims.count(-1) or int(np.prod(dims)) != x.shape[ax]:
        raise op_error("unflatten", f"`shape`={list(shape)} does not multiply to x.shape[{ax}]={x.shape[ax]}")
    return x.reshape(x.shape[:ax] + tuple(dims) + x.shape[ax + 1:])


def view(x, shape_or_dtype, name=None):
    """Reshape (`view(x, [2, 3])`) or reinterpret the bits as another dtype (`view(x, 'int32')`).

    A new dtype of a different width changes the last dim (e.g. float32 -> uint8
    multiplies it by 4). pdx returns a new array; there is no shared storage.

    Args:
      x: a tensor.
      shape_or_dtype: a shape list/tuple, or a dtype.
      name: ignored.

    Returns:
      The reshaped or bit-cast tensor.

    Example:
      >>> import pdx
      >>> pdx.view(pdx.zeros([6]), [2, 3]).shape
      (2, 3)
    """
    x = as_array(x, op="view")
    if isinstance(shape_or_dtype, (list, tuple)):
        return reshape(x, shape_or_dtype)
    dt = dtype_arg(shape_or_dtype, op="view", name="shape_or_dtype")
    if dt == x.dtype:
        return x
    old, new = x.dtype.itemsize, dt.itemsize
    if old == new:
        return jax.lax.bitcast_convert_type(x, dt)
    if old > new:
        return jax.lax.bitcast_convert_type(x, dt).reshape(*x.shape[:-1], -1)
    ratio = new // old
    if x.ndim == 0 or x.shape[-1] % ratio:
        raise op_error("view", f"x.shape={tuple(x.shape)} ({x.dtype}): the last dim must be a multiple of "
                               f"{ratio} to view it as {dt}")
    return jax.lax.bitcast_convert_type(x.reshape(*x.shape[:-1], -1, ratio), dt)


def view_as(x, other, name=None):
    """Reshape `x` to `other.shape`.

    Args:
      x: a tensor.
      other: a tensor with the same number of elements.
      name: ignored.

    Returns:
      The reshaped tensor.

    Example:
      >>> import pdx
      >>> pdx.view_as(pdx.zeros([6]), pdx.ones([3, 2])).shape
      (3, 2)
    """
    return reshape(x, list(as_array(other, name="other", op="view_as").shape))


def narrow(input, dim, start, length):  # noqa: A002 (Paddle's name)
    """The slice `[start, start + length)` of `input` along `dim`.

    Args:
      input: a tensor of rank >= 1.
      dim: the axis.
      start: first index (negative counts from the end; int or 0-D int tensor).
      length: number of entries.

    Returns:
      The slice.

    Example:
      >>> import pdx
      >>> pdx.narrow(pdx.arange(5), 0, 1, 3).tolist()
      [1, 2, 3]
    """
    x = as_array(input, name="input", op="narrow")
    check_rank(x, op="narrow", name="input", at_least=1)
    ax = _axis(dim, x.ndim, "narrow", "dim")
    size = x.shape[ax]
    s = static_int(start, op="narrow", name="start")
    s = s + size if s < 0 else s
    n = static_int(length, op="narrow", name="length")
    if not (0 <= s <= size and 0 <= n and s + n <= size):
        raise op_error("narrow", f"start={start}, length={length} do not fit input.shape[{ax}]={size}")
    return jax.lax.slice_in_dim(x, s, s + n, axis=ax)


def broadcast_shape(x_shape, y_shape):
    """The broadcast shape of two shapes.

    Args:
      x_shape: a list/tuple of ints.
      y_shape: a list/tuple of ints.

    Returns:
      A list of ints.

    Example:
      >>> import pdx
      >>> pdx.broadcast_shape([2, 1, 3], [4, 1])
      [2, 4, 3]
    """
    return broadcast_shapes(x_shape, y_shape)


def broadcast_shapes(*shapes):
    """The broadcast shape of several shapes.

    Args:
      *shapes: lists/tuples of ints.

    Returns:
      A list of ints.

    Example:
      >>> import pdx
      >>> pdx.broadcast_shapes([2, 1], [3], [1, 1])
      [2, 3]
    """
    dims = [tuple(shape_list(s, op="broadcast_shapes", name=f"shapes[{i}]")) for i, s in enumerate(shapes)]
    try:
        return list(np.broadcast_shapes(*dims))
    except ValueError:
        raise op_error("broadcast_shapes", f"shapes {dims} cannot be broadcast together; dims must be equal "
                                           "or 1 when aligned from the right") from None


def broadcast_tensors(input, name=None):  # noqa: A002 (Paddle's name)
    """Broadcast a list of tensors to their common shape.

    Args:
      input: a list/tuple of tensors.
      name: ignored.

    Returns:
      A list of tensors, all of the broadcast shape.

    Example:
      >>> import pdx
      >>> [t.shape for t in pdx.broadcast_tensors([pdx.zeros([2, 1]), pdx.ones([3])])]
      [(2, 3), (2, 3)]
    """
    arrays = _tensor_list(input, "broadcast_tensors", "input")
    shape = broadcast_shapes(*[a.shape for a in arrays])
    return [jnp.broadcast_to(a, shape) for a in arrays]


def crop(x, shape=None, offsets=None, name=None):
    """The block of `x` of size `shape` starting at `offsets`.

    Args:
      x: a tensor.
      shape: output shape (default `x.shape`); -1 keeps the rest of that dim.
      offsets: start per dim (default zeros).
      name: ignored.

    Returns:
      The cropped tensor.

    Example:
      >>> import pdx
      >>> pdx.crop(pdx.arange(9).reshape([3, 3]), shape=[2, 2], offsets=[1, 1]).tolist()
      [[4, 5], [7, 8]]
    """
    x = as_array(x, op="crop")
    offs = [0] * x.ndim if offsets is None else int_list(offsets, op="crop", name="offsets")
    dims = list(x.shape) if shape is None else list(shape_list(shape, op="crop"))
    if len(offs) != x.ndim or len(dims) != x.ndim:
        raise op_error("crop", f"`shape`={dims} and `offsets`={offs} need one entry per dim of x.shape="
                               f"{tuple(x.shape)}")
    dims = [x.shape[i] - offs[i] if d == -1 else d for i, d in enumerate(dims)]
    if any(o < 0 or d < 0 or o + d > n for o, d, n in zip(offs, dims, x.shape)):
        raise op_error("crop", f"offsets={offs} + shape={dims} exceed x.shape={tuple(x.shape)}")
    return jax.lax.slice(x, offs, [o + d for o, d in zip(offs, dims)])


def unfold(x, axis, size, step, name=None):
    """Sliding windows of `size` entries every `step` along `axis`, as a new last dim.

    Args:
      x: a tensor.
      axis: the axis to slide along.
      size: window length.
      step: stride between windows (> 0).
      name: ignored.

    Returns:
      A tensor whose `axis` dim is the number of windows, with a new last dim `size`.

    Example:
      >>> import pdx
      >>> pdx.unfold(pdx.arange(5), 0, 2, 2).tolist()
      [[0, 1], [2, 3]]
    """
    x = as_array(x, op="unfold")
    x1 = x.reshape(1) if x.ndim == 0 else x
    ax = _axis(axis, x1.ndim, "unfold")
    size, step = static_int(size, op="unfold", name="size"), static_int(step, op="unfold", name="step")
    if size < 0 or size > x1.shape[ax] or step <= 0:
        raise op_error("unfold", f"size={size} must be in [0, {x1.shape[ax]}] and step={step} > 0")
    n = (x1.shape[ax] - size) // step + 1
    idx = np.arange(n)[:, None] * step + np.arange(size)[None, :]
    out = jnp.take(x1, idx.reshape(-1), axis=ax)
    out = out.reshape(x1.shape[:ax] + (n, size) + x1.shape[ax + 1:])
    return jnp.moveaxis(out, ax + 1, -1)


def as_strided(x, shape, stride, offset=0, name=None):
    """A tensor of `shape` whose element `i` is `x.flatten()[offset / itemsize + sum(i_k * stride[k])]`.

    As in Paddle, `stride` counts elements and `offset` counts bytes (a
    multiple of the element size). pdx gathers the elements into a new array
    (there are no shared-storage views).

    Args:
      x: a tensor.
      shape: output shape.
      stride: element stride per output dim.
      offset: start offset into the flattened `x`, in bytes.
      name: ignored.

    Returns:
      The gathered tensor.

    Example:
      >>> import pdx
      >>> pdx.as_strided(pdx.arange(6), [2, 2], [3, 1]).tolist()
      [[0, 1], [3, 4]]
    """
    x = as_array(x, op="as_strided")
    dims = shape_list(shape, op="as_strided")
    strides = int_list(stride, op="as_strided", name="stride")
    if len(strides) != len(dims):
        raise op_error("as_strided", f"`stride`={strides} needs one entry per dim of shape={list(dims)}")
    offset = static_int(offset, op="as_strided", name="offset")
    if offset < 0 or offset % x.dtype.itemsize:
        raise op_error("as_strided", f"`offset`={offset} is in bytes and must be a non-negative multiple of "
                                     f"the element size {x.dtype.itemsize} ({x.dtype})")
    idx = np.full(dims, offset // x.dtype.itemsize, np.int64)
    for k, (d, s) in enumerate(zip(dims, strides)):
        idx = idx + (np.arange(d) * s).reshape([-1 if j == k else 1 for j in range(len(dims))])
    if idx.size and (idx.min() < 0 or idx.max() >= x.size):
        raise op_error("as_strided", f"shape={list(dims)}, stride={strides}, offset={offset} reach outside "
                                     f"the {x.size} elements of x")
    return x.reshape(-1)[jnp.asarray(idx, jnp.int32)]
