"""SparseEmbedding: an embedding table whose rows are split over the devices and trained sparsely.

The table's rows carry the logical axis name `TABLE_ROWS`; `TABLE_RULES` maps
it to every mesh axis, so on a `pdx.parallel.HybridConfig` mesh each device
holds rows / devices of it (the parameter-server role, done with sharding).
A lookup is a plain gather: XLA's SPMD partitioner turns a gather from a
row-split table into a masked local gather plus one all-reduce of the
looked-up rows (B*fields, dim); the table itself never moves.

Eagerly and under any ordinary training step the layer is a normal
`pdx.nn.Embedding` (a dense gradient for the whole table). Inside a step
made by `pdx.models.rec.make_sparse_step` it reads its rows from a lookup the
step controls (`_Capture`), so the step differentiates the loss with respect
to the looked-up rows only and updates just those rows.
"""

from __future__ import annotations

import math
import threading

import jax
import jax.numpy as jnp
from flax import nnx

from pdx.nn import Layer, ParamAttr, axes
from pdx.nn.initializer import TruncatedNormal

__all__ = ["TABLE_ROWS", "TABLE_RULES", "SparseEmbedding", "lookup"]

TABLE_ROWS = "table_rows"
# Tables are split over every mesh axis (whatever of them has size > 1 and divides the rows).
TABLE_RULES = {TABLE_ROWS: ("dp", "sharding", "ep", "sep", "mp", "pp")}


def as_rngs(rngs):
    """None / nnx.Rngs as they are; a seed or key becomes an nnx.Rngs."""
    return rngs if rngs is None or isinstance(rngs, nnx.Rngs) else nnx.Rngs(rngs)


def lookup(table, ids):
    """Rows of `table` (rows, dim) at integer `ids` (any shape) -> ids.shape + (dim,).

    Ids outside [0, rows) are clamped (hash raw ids into range with `hash_ids`).
    """
    return jnp.take(table, ids, axis=0, mode="clip")


class _Capture:
    """While active, SparseEmbedding layers look their rows up through this object.

    `names` maps id(layer) -> the table's state name; with `deltas` (name -> one
    zeros array per call) the rows are `stop_gradient(table)[ids] + delta`, so
    the gradient of the loss with respect to `delta` is the gradient with
    respect to the looked-up rows and no dense table gradient exists.
    """

    _local = threading.local()

    def __init__(self, names: dict, deltas: dict | None = None):
        self.names = names
        self.deltas = deltas
        self.ids = {name: [] for name in names.values()}

    @classmethod
    def active(cls):
        stack = getattr(cls._local, "stack", None)
        return stack[-1] if stack else None

    def __enter__(self):
        if not hasattr(self._local, "stack"):
            self._local.stack = []
        self._local.stack.append(self)
        return self

    def __exit__(self, *exc):
        self._local.stack.pop()
        return False

    def lookup(self, layer, ids):
        name = self.names.get(id(layer))
        if name is None:  # a table the step does not train sparsely
            return lookup(layer.weight[...], ids)
        calls = self.ids[name]
        rows = lookup(jax.lax.stop_gradient(layer.weight[...]), ids)
        if self.deltas is not None:
            rows = rows + self.deltas[name][len(calls)].astype(rows.dtype)
        calls.append(ids)
        return rows


class SparseEmbedding(Layer):
    """An embedding table of `num_embeddings` rows split over the devices, trained row by row.

    Like Paddle's `nn.Embedding(..., sparse=True)` on a parameter server: the
    weight is `[num_embeddings, embedding_dim]` with logical axes
    `(TABLE_ROWS, "embed")`; `pdx.parallel.shard` / `rec.sparse_state_shardings`
    with `TABLE_RULES` split its rows over all devices. `forward(ids)` gathers
    rows. Trained by `make_sparse_step`, only the looked-up rows (and their
    optimizer state) are read and written each step.

    Args:
      num_embeddings: rows (hash raw ids into this range with `hash_ids`).
      embedding_dim: size of each row.
      weight_attr: None, a `pdx.nn.ParamAttr` or an initializer (default
        TruncatedNormal(0, 0.1 / sqrt(embedding_dim)), PaddleRec's choice).
      name: shown in repr.
      dtype: keyword-only parameter dtype.
      rngs: keyword-only seed / key / nnx.Rngs (else the global generator).

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.models.rec import SparseEmbedding
      >>> emb = SparseEmbedding(100, 8, rngs=0)
      >>> emb(jnp.array([[1, 2, 3]])).shape
      (1, 3, 8)
    """

    def __init__(self, num_embeddings, embedding_dim, weight_attr=None, name=None, *, dtype=None, rngs=None):
        super().__init__(dtype=dtype)
        for arg, value in (("num_embeddings", num_embeddings), ("embedding_dim", embedding_dim)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"SparseEmbedding: {arg} must be a positive int; got {value!r}")
        self._num_embeddings = num_embeddings
        self._embedding_dim = embedding_dim
        self._name = name
        if weight_attr is None:
            weight_attr = ParamAttr(initializer=TruncatedNormal(0.0, 0.1 / math.sqrt(embedding_dim)))
        self.weight = self.create_parameter((num_embeddings, embedding_dim), attr=weight_attr,
                                            axis_names=(TABLE_ROWS, axes.EMBED), rngs=as_rngs(rngs))

    @property
    def num_embeddings(self) -> int:
        return self._num_embeddings

    @property
    def embedding_dim(self) -> int:
        return self._embedding_dim

    def forward(self, ids):
        """(...) integer ids -> (..., embedding_dim) rows."""
        capture = _Capture.active()
        if capture is not None:
            return capture.lookup(self, ids)
        return lookup(self.weight[...], ids)

    def extra_repr(self) -> str:
        out = f"{self._num_embeddings}, {self._embedding_dim}"
        return out + (f", name={self._name}" if self._name is not None else "")
