"""Paged attention on CPU: the "onednn" implementation of `paged_attention_with_new`.

XLA:CPU runs the reference as a gather of every row's blocks into a dense
sequence followed by two batched matmuls whose layouts it transposes: at 128
decoding rows of 256 positions that is most of a serving step.
`csrc/paged_attention.cc` reads the keys through each row's block table in
place (nothing gathered), one part per (row, key/value head) on XLA's
threads, the query heads of a group sharing every key they read.

Data flow: `paged_attention_with_new(q, k, v, pages..., valid)` calls the
handler with float32 queries and the pages as they are (float32 or bfloat16,
read in place), forward only like the Pallas kernel (serving does not
differentiate it). Importing the
module registers it as `pdx.kernels.paged_attention_with_new`'s "onednn";
"auto" prefers it on CPU where native kernels are allowed (`pdx._lowering`)
for calls of at most `MAX_PREFERRED_TOKENS` new tokens per row (decode
steps: 24.6 -> 3.9 ms a layer at 128 rows of 256 positions, 2 cores); longer
prefill chunks keep XLA's batched matmuls, which are as fast there.

Example:
  >>> kp = jnp.ones((4, 16, 2, 64)); q = jnp.ones((3, 1, 8, 64)); k = jnp.ones((3, 1, 2, 64))
  >>> tables = jnp.array([[1, 2], [3, 0], [0, 0]]); lens = jnp.array([20, 5, 1])
  >>> out = paged_attention(q, k, k, kp, kp, tables, lens, jnp.ones((3, 1), bool), scale=0.125)
  >>> out.shape
  (3, 1, 8, 64)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from pdx._lowering import native_kernels
from pdx.kernels import _dispatch, _paged_attention
from pdx.kernels.onednn import _build

__all__ = ["MAX_PREFERRED_TOKENS", "paged_attention", "paged_attention_unfit", "preferred"]

_FLOATS = (jnp.float32, jnp.bfloat16, jnp.float16)
_PAGES = (jnp.float32, jnp.bfloat16)   # read in place by the handler (a float16 pool would be converted whole)

def paged_attention_unfit(q, k_pages) -> str | None:
    """None if the CPU kernel takes the call, else the reason it does not."""
    if _dispatch.platform() != "cpu":
        return f"the oneDNN paged attention runs on CPU; the default backend is {_dispatch.platform()!r}"
    if q.dtype not in _FLOATS or k_pages.dtype not in _PAGES:
        return (f"the oneDNN paged attention takes float32/bfloat16/float16 queries and float32/bfloat16 pages; "
                f"got {q.dtype}, {k_pages.dtype}")
    return _build.unavailable_reason()


def paged_attention(q, k, v, k_pages, v_pages, block_tables, context_lens, valid, *, scale, sliding_window=None):
    """`pdx.kernels.paged_attention_with_new` on the CPU kernel, in q's dtype.

    The pages are read in place in their dtype (float32 or bfloat16); the new
    keys/values are rounded to it first, as writing them into the pages would.
    """
    call = jax.ffi.ffi_call("pdx_onednn_paged_attention", jax.ShapeDtypeStruct(q.shape, jnp.float32),
                            vmap_method="sequential")
    out = call(q.astype(jnp.float32), k.astype(k_pages.dtype), v.astype(k_pages.dtype), k_pages, v_pages,
               block_tables.astype(jnp.int32), context_lens.astype(jnp.int32), valid.astype(jnp.int32),
               scale=np.float32(scale), window=np.int64(sliding_window or 0))
    return out.astype(q.dtype)


def _impl(q, k, v, k_pages, v_pages, block_tables, context_lens, valid, *, scale, sliding_window, block_sizes):
    del block_sizes
    reason = paged_attention_unfit(q, k_pages)
    if reason is not None:
        raise _dispatch.Unsupported(reason)
    return paged_attention(q, k, v, k_pages, v_pages, block_tables, context_lens, valid, scale=scale,
                           sliding_window=sliding_window)


# Decode (and speculative scoring) widths; longer prefill chunks run as fast on XLA's batched matmuls.
MAX_PREFERRED_TOKENS = 8


def preferred(q, k, v, k_pages, *_, **__) -> bool:
    """Whether "auto" should pick the CPU kernel: native kernels allowed, it fits, at most 8 new tokens a row."""
    return native_kernels() and q.shape[1] <= MAX_PREFERRED_TOKENS and paged_attention_unfit(q, k_pages) is None


_dispatch.register_impl(_paged_attention.PAGED_ATTENTION_WITH_NEW, "onednn", _impl, prefer_if=preferred)
