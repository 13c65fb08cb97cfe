"""Scaled dot-product attention on CPU: the "onednn" implementation of `flash_attention`.

XLA:CPU runs attention as separate batched matmuls and softmax fusions, each
reading and writing the whole [batch, heads, seq_q, seq_k] logits; PyTorch's CPU
flash attention keeps them in cache. `csrc/attention.cc` (built into the
same library as the oneDNN convolutions, see `_build.py`) does the same:
tiles of 64 queries of one head, both products on oneDNN's sgemm, the softmax
in between, causal tiles skipping the keys they cannot see; the backward pass
recomputes the probabilities from the saved log-sum-exp.

Data flow: `attention(q, k, v)` casts to float32, calls the forward handler
(-> out, lse) under a `jax.custom_vjp` whose backward calls the backward handler
(-> dq, dk, dv), and casts back. The semantics are
`flash_attention_reference`'s without bias or segment ids; forward-mode
differentiation is not defined (as for the Pallas kernel).

Importing the module registers it as `pdx.kernels.flash_attention`'s "onednn"
(`OPS["flash_attention"]`): "auto" prefers it where `preferred`; a layer's
attention (`F.scaled_dot_product_attention`) hands unmasked calls to that op
where native kernels are allowed and keeps its own math for masked ones, also
under `use_impl("onednn")`.

Example:
  >>> q = jnp.ones((1, 8, 2, 16))
  >>> attention(q, q, q, causal=True, scale=0.25).shape
  (1, 8, 2, 16)
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from pdx._lowering import native_kernels
from pdx.kernels import _dispatch, _flash_attention
from pdx.kernels.onednn import _build

__all__ = ["attention", "attention_unfit", "preferred"]

_FLOATS = (jnp.float32, jnp.bfloat16, jnp.float16)


def attention_unfit(q, k, v, q_seg=None, bias=None) -> str | None:
    """None if the CPU kernel takes the call, else the reason it does not."""
    if _dispatch.platform() != "cpu":
        return f"the oneDNN attention runs on CPU; the default backend is {_dispatch.platform()!r}"
    if q_seg is not None or bias is not None:
        return "the oneDNN attention takes neither segment_ids nor bias"
    if not all(x.dtype in _FLOATS for x in (q, k, v)):
        return f"the oneDNN attention takes float32/bfloat16/float16; got {q.dtype}, {k.dtype}, {v.dtype}"
    if not all(isinstance(n, int) and n > 0 for n in (q.shape[2], q.shape[3], k.shape[2], v.shape[3])):
        return f"the oneDNN attention needs known, nonzero head counts and dims; got q{q.shape}, v{v.shape}"
    if isinstance(k.shape[1], int) and k.shape[1] == 0:
        return "the oneDNN attention needs at least one key"
    return _build.unavailable_reason()


def preferred(q, k, v, q_seg=None, bias=None) -> bool:
    """Whether "auto" should pick the CPU kernel: native kernels allowed here, and it fits."""
    return native_kernels() and attention_unfit(q, k, v, q_seg, bias) is None


def _forward(q, k, v, scale, causal):
    b, sq, hq, _ = q.shape
    call = jax.ffi.ffi_call("pdx_onednn_attention_forward",
                            (jax.ShapeDtypeStruct((b, sq, hq, v.shape[3]), jnp.float32),
                             jax.ShapeDtypeStruct((b, hq, sq), jnp.float32)),
                            vmap_method="sequential")
    return call(q, k, v, scale=np.float32(scale), causal=np.int64(causal))


@functools.partial(jax.custom_vjp, nondiff_argnums=(3, 4))
def _attention(q, k, v, scale, causal):
    return _forward(q, k, v, scale, causal)[0]


def _attention_fwd(q, k, v, scale, causal):
    out, lse = _forward(q, k, v, scale, causal)
    return out, (q, k, v, out, lse)


def _attention_bwd(scale, causal, residuals, d_out):
    q, k, v, out, lse = residuals
    call = jax.ffi.ffi_call("pdx_onednn_attention_backward",
                            tuple(jax.ShapeDtypeStruct(x.shape, jnp.float32) for x in (q, k, v)),
                            vmap_method="sequential")
    return call(q, k, v, out, lse, d_out.astype(jnp.float32), scale=np.float32(scale), causal=np.int64(causal))


_attention.defvjp(_attention_fwd, _attention_bwd)


def attention(q, k, v, *, causal: bool, scale: float):
    """softmax(scale * q k^T) v over [batch, seq, heads, head_dim] on oneDNN, in q's dtype.

    k and v may have fewer heads than q (a divisor: grouped-query attention).
    Low-precision inputs are computed in float32.
    """
    f32 = [x.astype(jnp.float32) for x in (q, k, v)]
    return _attention(*f32, float(scale), bool(causal)).astype(q.dtype)


def _flash_attention_impl(q, k, v, q_seg, kv_seg, bias, *, causal, scale, block_sizes):
    del kv_seg, block_sizes
    reason = attention_unfit(q, k, v, q_seg, bias)
    if reason is not None:
        raise _dispatch.Unsupported(reason)
    return attention(q, k, v, causal=causal, scale=scale)


def _unbiased(q, k, v, q_seg, kv_seg, bias, **_) -> bool:
    return bias is None


_dispatch.register_impl(_flash_attention.FLASH_ATTENTION, "onednn", _flash_attention_impl,
                        prefer_if=lambda q, k, v, q_seg, kv_seg, bias, **_: preferred(q, k, v, q_seg, bias),
                        layer_prefer_if=lambda *args, **kwargs: _unbiased(*args, **kwargs) and native_kernels(),
                        layer_takes=_unbiased)
