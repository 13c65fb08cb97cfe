"""Hashing raw feature ids into a fixed number of embedding rows (the "hashing trick").

The hash is murmur3's 32-bit finalizer (fmix32) in uint32 arithmetic, so the
same raw id lands in the same bucket on every machine, under `jax.jit` and in
numpy. A per-field seed makes the same raw value in two fields (user id 7,
item id 7) land in unrelated rows of a shared table.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

__all__ = ["hash_ids"]

_GOLDEN = 0x9E3779B9        # 2^32 / phi: spreads consecutive field numbers and high words apart
_M1, _M2 = 0x85EBCA6B, 0xC2B2AE35


def _fmix32(x):
    """murmur3's avalanche step on uint32 arrays (every input bit flips ~half the output bits)."""
    x = x ^ (x >> 16)
    x = x * jnp.uint32(_M1)
    x = x ^ (x >> 13)
    x = x * jnp.uint32(_M2)
    return x ^ (x >> 16)


def _words(raw):
    """(low, high) uint32 words of integer ids; high is None for ids of 32 bits or fewer."""
    if isinstance(raw, np.ndarray) or np.isscalar(raw) or isinstance(raw, (list, tuple)):
        host = np.asarray(raw)
        if not np.issubdtype(host.dtype, np.integer):
            raise TypeError(f"hash_ids: raw ids must be integers; got dtype {host.dtype}. Map strings to "
                            "integers first (e.g. with a dictionary or a 64-bit string hash)")
        if host.dtype.itemsize == 8:   # JAX runs in 32 bits: split on the host, hash both halves
            u = host.astype(np.uint64)
            return (jnp.asarray((u & 0xFFFFFFFF).astype(np.uint32)), jnp.asarray((u >> 32).astype(np.uint32)))
        return jnp.asarray(host.astype(np.uint32) if host.dtype.kind == "i" else host).astype(jnp.uint32), None
    if not jnp.issubdtype(raw.dtype, jnp.integer):
        raise TypeError(f"hash_ids: raw ids must be integers; got dtype {raw.dtype}")
    return raw.astype(jnp.uint32), None


def hash_ids(raw, num_buckets: int, *, salt: int = 0, field=0):
    """Hash integer ids into `[0, num_buckets)` with a stable, seeded hash.

    `bucket = fmix32(low ^ seed [, then the high word]) % num_buckets` with
    `seed = fmix32(salt ^ fmix32(field + 0x9E3779B9))`: deterministic across
    runs, processes and jit/eager; 64-bit numpy ids use both 32-bit words.

    Args:
      raw: integer ids of any shape (jax or numpy; int64/uint64 numpy ids are
        split into two 32-bit words on the host).
      num_buckets: rows of the table, 1 <= num_buckets < 2**31 (the result is int32).
      salt: keyword-only global seed (change it to get an independent hash).
      field: keyword-only field number, a scalar or an integer array
        broadcastable to `raw` (e.g. `jnp.arange(F)` for (B, F) ids): the
        same raw id in different fields goes to unrelated buckets.

    Returns:
      int32 bucket indices, shaped like `raw` (broadcast with `field`).

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.models.rec import hash_ids
      >>> b = hash_ids(jnp.array([[7, 7]]), 1000, field=jnp.arange(2))
      >>> b.shape, bool(b[0, 0] != b[0, 1])
      ((1, 2), True)
    """
    if isinstance(num_buckets, bool) or not isinstance(num_buckets, (int, np.integer)) or not 1 <= num_buckets < 2**31:
        raise ValueError(f"hash_ids: num_buckets must be an int in [1, 2**31); got {num_buckets!r}")
    if isinstance(salt, bool) or not isinstance(salt, (int, np.integer)):
        raise TypeError(f"hash_ids: salt must be an int; got {salt!r}")
    low, high = _words(raw)
    field = jnp.asarray(field)
    if not jnp.issubdtype(field.dtype, jnp.integer):
        raise TypeError(f"hash_ids: field must be an int or an integer array; got dtype {field.dtype}")
    field_mix = _fmix32(field.astype(jnp.uint32) + jnp.uint32(_GOLDEN))
    seed = _fmix32(jnp.uint32(int(salt) & 0xFFFFFFFF) ^ field_mix)
    h = _fmix32(low ^ seed)
    if high is not None:
        h = _fmix32(h ^ _fmix32(high + jnp.uint32(_GOLDEN)))
    return (h % jnp.uint32(num_buckets)).astype(jnp.int32)
