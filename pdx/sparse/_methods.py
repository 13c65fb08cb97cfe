"""Paddle's sparse-tensor methods on jax's BCOO / BCSR (`sp.to_dense()`, `sp.values()`, ...).

Registered when pdx is imported, like the dense Tensor methods, and off with
the same switch (`PDX_TENSOR_METHODS=0`). Only names the classes lack are
added. `indices` stays jax's field on BCOO (an array, not a method): use
`pdx.sparse.indices(x)` for Paddle's `[sparse_dim, nnz]` layout.
"""

from __future__ import annotations

from jax.experimental.sparse import BCOO, BCSR

from pdx.sparse import _core

__all__ = ["register"]


def _is_coalesced(self) -> bool:
    """Whether the entries are sorted with duplicates summed (Paddle's `is_coalesced()`)."""
    if isinstance(self, BCSR):
        raise TypeError("is_coalesced() is defined for COO tensors only (as in Paddle); got a CSR tensor")
    return bool(self.indices_sorted and self.unique_indices)  # set by coalesce(), as Paddle's flag


_METHODS = {
    "to_dense": _core.to_dense,
    "values": _core.values,
    "crows": _core.crows,
    "cols": _core.cols,
    "nnz": _core.nnz,
    "coalesce": _core.coalesce,
    "is_coalesced": _is_coalesced,
    "is_sparse": _core.is_sparse,
    "is_sparse_coo": _core.is_sparse_coo,
    "is_sparse_csr": _core.is_sparse_csr,
    "to_sparse_coo": _core.to_sparse_coo,
    "to_sparse_csr": _core.to_sparse_csr,
    "is_dense": lambda self: False,
    "numpy": lambda self: __import__("numpy").asarray(_core.to_dense(self)),
}

_ADDED: dict[type, list[str]] = {}


def register(enabled: bool = True) -> None:
    """Add the methods to BCOO and BCSR (or, with enabled=False, remove the ones added)."""
    for cls in (BCOO, BCSR):
        for name in _ADDED.pop(cls, []):
            delattr(cls, name)
        if not enabled:
            continue
        added = []
        for name, fn in _METHODS.items():
            if name in vars(cls) or any(name in vars(base) for base in cls.__mro__[1:]):
                continue
            setattr(cls, name, fn)
            added.append(name)
        _ADDED[cls] = added
