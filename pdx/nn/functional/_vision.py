"""Vision rearrangements: pixel_shuffle / pixel_unshuffle and channel_shuffle."""

from __future__ import annotations

from pdx.nn.functional._args import array, check_rank, compiled, error, is_int, spatial_format

__all__ = ["channel_shuffle", "pixel_shuffle", "pixel_unshuffle"]


def _factor(value, name, op):
    if not is_int(value) or value < 1:
        raise error(op, f"{name} must be a positive int; got {name}={value!r}")
    return int(value)


@compiled("x")
def pixel_shuffle(x, upscale_factor, data_format="NCHW", name=None):
    """[N, C * r^2, H, W] -> [N, C, H * r, W * r] (sub-pixel convolution's rearrangement).

    Args:
      x: [N, C * r^2, H, W] (or NHWC) input.
      upscale_factor: r.
      data_format: 'NCHW' or 'NHWC'.
      name: ignored (Paddle compatibility).

    Returns:
      [N, C, H * r, W * r] (or NHWC).

    Example:
      >>> F.pixel_shuffle(jnp.ones((1, 8, 3, 3)), 2).shape
      (1, 2, 6, 6)
    """
    op = "pixel_shuffle"
    x = array(x, op=op)
    r = _factor(upscale_factor, "upscale_factor", op)
    is_last = spatial_format(data_format, 2, op=op)
    check_rank(x, 4, data_format, op=op)
    if is_last:
        n, h, w, c = x.shape
    else:
        n, c, h, w = x.shape
    if c % (r * r):
        raise error(op, f"the {c} channels of x.shape={tuple(x.shape)} must be divisible by upscale_factor^2={r * r}")
    oc = c // (r * r)
    if is_last:
        return x.reshape(n, h, w, oc, r, r).transpose(0, 1, 4, 2, 5, 3).reshape(n, h * r, w * r, oc)
    return x.reshape(n, oc, r, r, h, w).transpose(0, 1, 4, 2, 5, 3).reshape(n, oc, h * r, w * r)


@compiled("x")
def pixel_unshuffle(x, downscale_factor, data_format="NCHW", name=None):
    """[N, C, H * r, W * r] -> [N, C * r^2, H, W], the inverse of pixel_shuffle.

    Args:
      x: [N, C, H * r, W * r] (or NHWC) input.
      downscale_factor: r.
      data_format: 'NCHW' or 'NHWC'.
      name: ignored (Paddle compatibility).

    Returns:
      [N, C * r^2, H, W] (or NHWC).

    Example:
      >>> F.pixel_unshuffle(jnp.ones((1, 2, 6, 6)), 2).shape
      (1, 8, 3, 3)
    """
    op = "pixel_unshuffle"
    x = array(x, op=op)
    r = _factor(downscale_factor, "downscale_factor", op)
    is_last = spatial_format(data_format, 2, op=op)
    check_rank(x, 4, data_format, op=op)
    if is_last:
        n, h, w, c = x.shape
    else:
        n, c, h, w = x.shape
    if h % r or w % r:
        raise error(op, f"H={h} and W={w} of x.shape={tuple(x.shape)} must be divisible by downscale_factor={r}")
    oh, ow = h // r, w // r
    if is_last:
        return x.reshape(n, oh, r, ow, r, c).transpose(0, 1, 3, 5, 2, 4).reshape(n, oh, ow, c * r * r)
    return x.reshape(n, c, oh, r, ow, r).transpose(0, 1, 3, 5, 2, 4).reshape(n, c * r * r, oh, ow)


@compiled("x")
def channel_shuffle(x, groups, data_format="NCHW", name=None):
    """Interleave channels across `groups` (ShuffleNet): [g, C/g] channel order -> [C/g, g].

    Args:
      x: 4-D input.
      groups: number of channel groups (divides C).
      data_format: 'NCHW' or 'NHWC'.
      name: ignored (Paddle compatibility).

    Returns:
      A tensor like `x` with channels interleaved.

    Example:
      >>> F.channel_shuffle(jnp.arange(4.0).reshape(1, 4, 1, 1), 2).ravel().tolist()
      [0.0, 2.0, 1.0, 3.0]
    """
    op = "channel_shuffle"
    x = array(x, op=op)
    g = _factor(groups, "groups", op)
    is_last = spatial_format(data_format, 2, op=op)
    check_rank(x, 4, data_format, op=op)
    c = x.shape[3] if is_last else x.shape[1]
    if c % g:
        raise error(op, f"the {c} channels of x.shape={tuple(x.shape)} must be divisible by groups={g}")
    if is_last:
        n, h, w, _ = x.shape
        return x.reshape(n, h, w, g, c // g).transpose(0, 1, 2, 4, 3).reshape(n, h, w, c)
    n, _, h, w = x.shape
    return x.reshape(n, g, c // g, h, w).transpose(0, 2, 1, 3, 4).reshape(n, c, h, w)

