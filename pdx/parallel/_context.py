"""Context-parallel attention: self-attention over a sequence split on the "sep" mesh axis.

Two implementations, both one `jax.shard_map` over the sequence axis, with
the batch and the (kv) heads staying where the config's rules put them:

- `"allgather"`: every device gathers the whole K and V (`all_gather`) and
  attends its own query block to them, masking by global positions. Simple,
  one collective per tensor, but each device holds the full K/V.
- `"ring"`: K/V blocks travel round the ring of sep devices
  (`lax.ppermute`), each device merging one block per step into a running
  (max, sum, output) in float32 (the online softmax), so no device ever holds
  more than two K/V blocks. Causal attention is load-balanced: the sequence
  is cut into 2*sep chunks and device i holds chunks i and 2*sep-1-i (a
  zigzag, moved there and back with two collective-permutes per tensor), so
  after the diagonal step every device computes exactly half a block per
  step (two chunk x chunk blocks): all its queries against the first kv
  chunk when the kv came from an earlier device, its second query chunk
  against both kv chunks otherwise.

Gradients come from autodiff through the collectives (an all-gather's
transpose is a reduce-scatter, a ppermute's the reverse ppermute).
Grouped-query attention (fewer kv heads) works in both.
"""

from __future__ import annotations

import math
from typing import Literal

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh, PartitionSpec

from pdx.nn import axes
from pdx.parallel._config import CONTEXT_PARALLEL_IMPLS, HybridConfig
from pdx.parallel._shard import active_mesh, logical_to_spec

_NEG = -1e30  # finite "minus infinity" for masked logits: exp(_NEG - m) underflows to 0 without NaNs


def _active():
    """(mesh, config, sequence mesh axis, its size) of the innermost `use_mesh`, or None."""
    active = active_mesh()
    if active is None:
        return None
    mesh, config = active
    axis = _sequence_axis(config.axis_rules())
    if axis is None:
        return None
    return mesh, config, axis, mesh.shape.get(axis, 1)


def _sequence_axis(rules):
    """The mesh axis context parallelism runs over: the first one "seq" maps to (after it, with
    `sequence_parallel`, comes "mp", whose split the attention's projections undo)."""
    axis = rules.get(axes.SEQ)
    if isinstance(axis, tuple):
        axis = axis[0] if axis else None
    return axis


def context_parallel_active() -> bool:
    """True inside `use_mesh(config)` whose "seq" mesh axis has more than one device.

    Models call `context_attention` instead of local attention when this holds.

    Example:
      >>> import pdx
      >>> pdx.parallel.context_parallel_active()
      False
    """
    found = _active()
    return found is not None and found[3] > 1


def _mask(q_pos, k_pos, q_seg, k_seg, *, causal, window):
    """Visibility (B|1, 1, 1, Sq, Sk) of keys to queries from global positions and segment ids."""
    gap = q_pos[:, None] - k_pos[None, :]
    mask = jnp.ones(gap.shape, bool)
    if causal:
        mask &= gap >= 0
    if window is not None:
        mask &= gap < window
    mask = mask[None, None, None]
    if q_seg is not None:
        mask = mask & (q_seg[:, :, None] == k_seg[:, None, :])[:, None, None]
    return mask


def _block(q, k, v, mask, scale):
    """One block's softmax partials in float32: output sum (B, KV, G, Sq, D), row max and row sum (B, KV, G, Sq).

    q: (B, Sq, KV, G, D); k, v: (B, Sk, KV, D). The max is a constant to autodiff:
    the normalized result does not depend on it.
    """
    s = jnp.einsum("bqhgd,bkhd->bhgqk", q, k, preferred_element_type=jnp.float32,
                   precision=lax.Precision.HIGHEST) * scale
    s = jnp.where(mask, s, _NEG)
    m = lax.stop_gradient(s.max(axis=-1))
    p = jnp.where(mask, jnp.exp(s - m[..., None]), 0.0)
    o = jnp.einsum("bhgqk,bkhd->bhgqd", p, v.astype(jnp.float32), precision=lax.Precision.HIGHEST)
    return o, m, p.sum(axis=-1)


def _merge(a, b):
    """Combine two softmax partials over disjoint key sets (the online-softmax update)."""
    (oa, ma, la), (ob, mb, lb) = a, b
    m = jnp.maximum(ma, mb)
    ca, cb = jnp.exp(ma - m), jnp.exp(mb - m)
    return oa * ca[..., None] + ob * cb[..., None], m, la * ca + lb * cb


def _finish(partial, dtype):
    """(B, KV, G, Sq, D) partial -> normalized (B, Sq, KV*G, D); rows that saw no key are zero."""
    o, _, l = partial
    o = o / jnp.where(l > 0, l, 1.0)[..., None]
    b, kv, g, sq, d = o.shape
    return o.transpose(0, 3, 1, 2, 4).reshape(b, sq, kv * g, d).astype(dtype)


def _group(q, kv_heads):
    b, s, h, d = q.shape
    return q.reshape(b, s, kv_heads, h // kv_heads, d)


def _allgather_local(q, k, v, seg, *, axis, causal, window, scale):
    n, i = lax.axis_size(axis), lax.axis_index(axis)
    c = q.shape[1]
    k_all = lax.all_gather(k, axis, axis=1, tiled=True)
    v_all = lax.all_gather(v, axis, axis=1, tiled=True)
    k_seg = None if seg is None else lax.all_gather(seg, axis, axis=1, tiled=True)
    q_pos = i * c + jnp.arange(c)
    mask = _mask(q_pos, jnp.arange(n * c), seg, k_seg, causal=causal, window=window)
    return _finish(_block(_group(q, k.shape[2]), k_all, v_all, mask, scale), q.dtype)


def _ring_shift(xs, axis, n):
    perm = [(j, (j + 1) % n) for j in range(n)]
    return [None if x is None else lax.ppermute(x, axis, perm) for x in xs]


def _ring_plain_local(q, k, v, seg, *, axis, causal, window, scale):
    """Ring over contiguous blocks without causal masking (every block is needed)."""
    del causal, window
    n = lax.axis_size(axis)
    qg = _group(q, k.shape[2])
    pos = jnp.arange(q.shape[1])
    acc, k_seg = None, seg
    for t in range(n):
        part = _block(qg, k, v, _mask(pos, pos, seg, k_seg, causal=False, window=None), scale)
        acc = part if acc is None else _merge(acc, part)
        if t < n - 1:
            k, v, k_seg = _ring_shift([k, v, k_seg], axis, n)
    return _finish(acc, q.dtype)


def _zigzag_perms(n):
    """ppermute pairs moving contiguous chunk pairs (2d, 2d+1) to the zigzag layout (d, 2n-1-d)."""
    def dest(chunk):
        return chunk if chunk < n else 2 * n - 1 - chunk
    return [(d, dest(2 * d)) for d in range(n)], [(d, dest(2 * d + 1)) for d in range(n)]


def _to_zigzag(x, axis, n):
    """Local contiguous block (chunks 2i, 2i+1) -> this device's zigzag chunks (i, 2n-1-i), along dim 1."""
    if x is None:
        return None
    even, odd = _zigzag_perms(n)
    c = x.shape[1] // 2
    e = lax.ppermute(x[:, :c], axis, even)
    o = lax.ppermute(x[:, c:], axis, odd)
    first = lax.axis_index(axis) % 2 == 0  # device r's chunk r is the even one iff r is even
    return jnp.concatenate([jnp.where(first, e, o), jnp.where(first, o, e)], axis=1)


def _from_zigzag(y, axis, n):
    """Inverse of `_to_zigzag`."""
    even, odd = _zigzag_perms(n)
    c = y.shape[1] // 2
    first = lax.axis_index(axis) % 2 == 0
    y0, y1 = y[:, :c], y[:, c:]
    e = lax.ppermute(jnp.where(first, y0, y1), axis, [(b, a) for a, b in even])
    o = lax.ppermute(jnp.where(first, y1, y0), axis, [(b, a) for a, b in odd])
    return jnp.concatenate([e, o], axis=1)


def _ring_causal_local(q, k, v, seg, *, axis, causal, window, scale):
    """Load-balanced causal ring: zigzag chunks, half a block of work per step after the diagonal."""
    del causal
    n, i = lax.axis_size(axis), lax.axis_index(axis)
    q, k, v, seg = (_to_zigzag(x, axis, n) for x in (q, k, v, seg))
    c = q.shape[1] // 2
    qg = _group(q, k.shape[2])

    def positions(dev):
        return jnp.concatenate([dev * c + jnp.arange(c), (2 * n - 1 - dev) * c + jnp.arange(c)])

    q_pos, q_seg = positions(i), seg
    acc = _block(qg, k, v, _mask(q_pos, q_pos, q_seg, seg, causal=True, window=window), scale)
    k_seg = seg
    halves = lambda x: (None, None) if x is None else (x[:, :c], x[:, c:])  # noqa: E731
    q0, q1 = halves(qg)
    qs0, qs1 = halves(q_seg)
    for t in range(1, n):
        k, v, k_seg = _ring_shift([k, v, k_seg], axis, n)
        src = (i - t) % n
        k_pos = positions(src)
        (k0, k1), (v0, v1), (ks0, ks1) = halves(k), halves(v), halves(k_seg)
        # Visible c x c blocks: kv from an earlier device -> (q0, k0) and (q1, k0); from a later one ->
        # (q1, k0) and (q1, k1). (q1, k0) is common; the other block's operands are selected, not branched
        # on, so every device computes two c x c blocks per step.
        common = _block(q1, k0, v0, _mask(q_pos[c:], k_pos[:c], qs1, ks0, causal=True, window=window), scale)
        lower = src < i
        pick = lambda a, b: None if a is None else jnp.where(lower, a, b)  # noqa: E731
        other = _block(pick(q0, q1), pick(k0, k1), pick(v0, v1),
                       _mask(pick(q_pos[:c], q_pos[c:]), pick(k_pos[:c], k_pos[c:]), pick(qs0, qs1),
                             pick(ks0, ks1), causal=True, window=window), scale)
        empty = (jnp.zeros_like(other[0]), jnp.full_like(other[1], _NEG), jnp.zeros_like(other[2]))
        rows0 = tuple(jnp.where(lower, a, e) for a, e in zip(other, empty))
        rows1 = _merge(common, tuple(jnp.where(lower, e, a) for a, e in zip(other, empty)))
        acc = _merge(acc, tuple(jnp.concatenate([a, b], axis=3) for a, b in zip(rows0, rows1)))
    return _from_zigzag(_finish(acc, q.dtype), axis, n)


_IMPLS = {
    ("allgather", False): _allgather_local,
    ("allgather", True): _allgather_local,
    ("ring", False): _ring_plain_local,
    ("ring", True): _ring_causal_local,
}


def context_attention(q, k, v, *, causal: bool = False, segment_ids=None, window: int | None = None,
                      scale: float | None = None, impl: Literal["ring", "allgather"] | None = None,
                      config: HybridConfig | None = None, mesh: Mesh | None = None):
    """Attention softmax(q k^T * scale) v with the sequence split over the "sep" mesh axis.

    The result equals unsharded attention (`pdx.kernels.flash_attention`'s
    semantics) within float32 rounding, forward and backward. Inputs and the
    output are global arrays; their sequence dimension is split over the mesh
    axis the config's rules give "seq", batch and heads as the rules say.

    Args:
      q: (batch, seq_len, num_heads, head_dim).
      k, v: (batch, seq_len, num_kv_heads, head_dim); num_heads a multiple of num_kv_heads.
      causal: key j visible to query i iff j <= i.
      segment_ids: optional (batch, seq_len) ids; a query sees only keys of its own segment.
      window: with `causal`, key j visible to query i iff 0 <= i - j < window (a sliding window).
      scale: logit scale, default 1 / sqrt(head_dim).
      impl: "ring" or "allgather" (default: the config's `context_parallel`).
      config, mesh: default the innermost `pdx.parallel.use_mesh`.

    Returns:
      (batch, seq_len, num_heads, head_dim) in q's dtype.

    Raises:
      ValueError: no mesh is active, shapes disagree, or seq_len is not divisible
        by sep (all-gather) or 2*sep (the load-balanced causal ring).

    Example:
      >>> import jax, jax.numpy as jnp, pdx
      >>> cfg = pdx.parallel.HybridConfig(sep_degree=2, dp_degree=1)
      >>> q = jnp.ones((1, 8, 4, 16))
      >>> with pdx.parallel.use_mesh(cfg, cfg.mesh(jax.devices()[:2])):
      ...     out = pdx.parallel.context_attention(q, q[:, :, :2], q[:, :, :2], causal=True)
      >>> out.shape
      (1, 8, 4, 16)
    """
    if config is None:
        active = active_mesh()
        if active is None:
            raise ValueError("context_attention: no mesh is active; call it inside pdx.parallel.use_mesh(config) "
                             "or pass config= (and mesh=)")
        config = active.config
        mesh = active.mesh if mesh is None else mesh
    mesh = config.mesh() if mesh is None else mesh
    impl = config.context_parallel if impl is None else impl
    if impl not in CONTEXT_PARALLEL_IMPLS:
        raise ValueError(f"context_attention: impl must be one of {CONTEXT_PARALLEL_IMPLS}; got {impl!r}")
    if q.ndim != 4 or k.shape != v.shape or k.ndim != 4 or q.shape[:2] != k.shape[:2] or q.shape[3] != k.shape[3]:
        raise ValueError(f"context_attention: expected q (B, S, H, D) and k, v (B, S, KV, D); "
                         f"got {q.shape=}, {k.shape=}, {v.shape=}")
    b, s, h, d = q.shape
    kv = k.shape[2]
    if h % kv:
        raise ValueError(f"context_attention: num_heads={h} must be a multiple of num_kv_heads={kv}")
    if window is not None and not causal:
        raise ValueError(f"context_attention: window={window} needs causal=True")
    if segment_ids is not None and tuple(segment_ids.shape) != (b, s):
        raise ValueError(f"context_attention: segment_ids shape {tuple(segment_ids.shape)} must be (batch, seq_len) = {(b, s)}")
    rules = config.axis_rules()
    axis = _sequence_axis(rules)
    if not isinstance(axis, str) or axis not in mesh.shape:
        raise ValueError(f"context_attention: the rules put 'seq' on {axis!r}; it must be one mesh axis of {tuple(mesh.shape)}")
    n = mesh.shape[axis]
    balanced = impl == "ring" and causal and n > 1
    parts = 2 * n if balanced else n
    if s % parts:
        what = f"2*sep = 2*{n} = {parts} (the load-balanced causal ring cuts it into 2*sep chunks)" if balanced \
            else f"sep = {n}"
        raise ValueError(f"context_attention: seq_len={s} must be divisible by {what}; pad the sequence to a "
                         f"multiple of {parts}")
    batch = logical_to_spec((axes.BATCH,), (b,), mesh, rules)[0]
    heads = logical_to_spec((axes.KV_HEADS,), (kv,), mesh, rules)[0]
    if batch is not None and axis in ((batch,) if isinstance(batch, str) else batch):
        batch = None
    if heads == axis:
        heads = None
    qkv_spec = PartitionSpec(batch, axis, heads, None)
    seg_spec = PartitionSpec(batch, axis)
    local = _IMPLS[(impl, balanced)]
    scale = 1.0 / math.sqrt(d) if scale is None else float(scale)

    def body(q, k, v, seg):
        return local(q, k, v, seg, axis=axis, causal=causal, window=window, scale=scale)

    fn = jax.shard_map(body, mesh=mesh, in_specs=(qkv_spec, qkv_spec, qkv_spec, None if segment_ids is None else seg_spec),
                       out_specs=qkv_spec)
    return fn(q, k, v, segment_ids)
