"""Training with sparse embedding updates: a TrainState for the dense part plus row-wise table optimizers.

    state = SparseTrainState.create(model, dense_optimizer, sparse_optimizer)
    step = jax.jit(make_sparse_step(loss_fn), donate_argnums=0)
    state, loss = step(state, batch)

The dense parameters (MLP, FM's dense weights, biases) live in a
`pdx.TrainState` and are updated by a normal pdx optimizer. Every
`SparseEmbedding` table is a buffer of that TrainState (the dense optimizer
never sees it) and has its own `SparseOptimizer` state. One step:

    rows = table[ids]                  (B*fields, dim): the only rows read
    loss, (dense grads, row grads) = grad of loss_fn w.r.t. the dense params and the looked-up rows
    dense params <- the pdx optimizer's update
    table, state <- sparse_optimizer.update(table, state, ids, row grads): dedup + scatter of touched rows

With the state donated the scatter updates the table in place, so a step
costs what its touched rows cost, whatever the table's size.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from pdx.models.rec._embedding import TABLE_ROWS, TABLE_RULES, SparseEmbedding, _Capture
from pdx.models.rec._sparse_optim import SparseOptimizer
from pdx.parallel import HybridConfig
from pdx.train import TrainState, state_shardings

__all__ = ["SparseTrainState", "dense_parameters", "make_sparse_step", "sparse_state_shardings", "table_names"]


def table_names(model) -> dict:
    """{id(layer): state name of its weight} for every SparseEmbedding in `model` ("fm.embedding.weight")."""
    return {id(layer): f"{name}.weight" for name, layer in model.named_sublayers()
            if isinstance(layer, SparseEmbedding)}


def dense_parameters(model) -> list:
    """The model's parameters that are not SparseEmbedding tables (what the dense optimizer trains)."""
    tables = {id(layer.weight) for _, layer in model.named_sublayers() if isinstance(layer, SparseEmbedding)}
    return [p for p in model.parameters() if id(p) not in tables]


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class SparseTrainState:
    """Dense TrainState (tables among its buffers) + one row-wise optimizer state per table.

    Fields:
      dense: a `pdx.TrainState` over the dense parameters; `dense.buffers[name]`
        holds each table (name as in `state_dict()`, e.g. "fm.embedding.weight").
      tables: dict table name -> its SparseOptimizer state.
      optimizer: (static) the SparseOptimizer shared by all tables.
    """

    dense: TrainState
    tables: dict
    optimizer: SparseOptimizer = dataclasses.field(metadata=dict(static=True))

    @classmethod
    def create(cls, model, dense_optimizer, sparse_optimizer: SparseOptimizer, *, seed: int = 0) -> "SparseTrainState":
        """Split `model` into the dense TrainState and the tables' optimizer states.

        Args:
          model: a pdx Layer with one or more `SparseEmbedding` tables.
          dense_optimizer: a pdx optimizer over `dense_parameters(model)`.
          sparse_optimizer: `sparse_adagrad(...)` / `lazy_adam(...)` for the tables.
          seed: keyword-only seed of the TrainState's PRNG key.
        """
        if not isinstance(sparse_optimizer, SparseOptimizer):
            raise TypeError(f"SparseTrainState.create: sparse_optimizer must be a SparseOptimizer "
                            f"(rec.sparse_adagrad / rec.lazy_adam); got {type(sparse_optimizer).__name__}")
        names = sorted(table_names(model).values())
        if not names:
            raise ValueError(f"SparseTrainState.create: {type(model).__name__} has no SparseEmbedding; "
                             "train it with pdx.TrainState and a normal optimizer")
        tables = {id(layer.weight) for _, layer in model.named_sublayers() if isinstance(layer, SparseEmbedding)}
        dense_ids = {id(var) for _, var in dense_optimizer.trainable_parameters()}
        if tables & dense_ids:
            raise ValueError("SparseTrainState.create: the dense optimizer holds SparseEmbedding tables; build it "
                             "with parameters=rec.dense_parameters(model)")
        dense = TrainState.create(model, dense_optimizer, seed=seed)
        missing = [n for n in names if n not in dense.buffers]
        if missing:
            raise ValueError(f"SparseTrainState.create: tables {missing} not found among the state's buffers "
                             f"{sorted(dense.buffers)}")
        return cls(dense=dense, tables={n: sparse_optimizer.init(dense.buffers[n]) for n in names},
                   optimizer=sparse_optimizer)

    def update_model(self, model) -> None:
        """Copy the trained values (dense parameters and tables) into a live Layer."""
        self.dense.update_model(model)


def make_sparse_step(loss_fn: Callable[[Any, Any], jax.Array]):
    """`loss_fn(model, batch) -> scalar` into `step(state, batch) -> (state, loss)` with sparse table updates.

    Inside the step every `SparseEmbedding` call reads `stop_gradient(table)[ids]`
    plus a zero offset the step differentiates, so the table gets no dense
    gradient; the offsets' gradients are the looked-up rows' gradients and go
    to the sparse optimizer with their ids. A table may be called several
    times per forward (each call's rows are updated together).

    Example:
      >>> import jax, pdx
      >>> from pdx.models import rec
      >>> model = rec.DeepFM("deepfm-tiny", rngs=0)
      >>> opt = pdx.optimizer.Adam(1e-3, parameters=rec.dense_parameters(model))
      >>> state = rec.SparseTrainState.create(model, opt, rec.sparse_adagrad(0.05))
      >>> loss = lambda m, b: pdx.nn.functional.binary_cross_entropy_with_logits(m(b[0], b[1])[:, 0], b[2])
      >>> step = jax.jit(rec.make_sparse_step(loss), donate_argnums=0)  # doctest: +SKIP
    """

    def step(state: SparseTrainState, batch):
        dense = state.dense

        def run(params, deltas):
            model = dense.merge(params)
            capture = _Capture(table_names(model), deltas)
            with capture:
                loss = loss_fn(model, batch)
            return loss, (capture.ids, dense.read_buffers(model))

        shapes = jax.eval_shape(lambda p: run(p, None)[1][0], dense.params)
        deltas = {name: [jnp.zeros(ids.shape + (dense.buffers[name].shape[1],), jnp.float32) for ids in calls]
                  for name, calls in shapes.items()}
        (loss, (ids, buffers)), (grads, row_grads) = jax.value_and_grad(run, argnums=(0, 1), has_aux=True)(
            dense.params, deltas)
        new_dense = dense.replace(buffers=buffers).apply_gradients(grads)
        tables = dict(new_dense.buffers)
        table_states = dict(state.tables)
        for name in state.tables:
            if not ids[name]:
                tables[name] = dense.buffers[name]
                continue
            flat_ids = jnp.concatenate([i.reshape(-1) for i in ids[name]])
            dim = dense.buffers[name].shape[1]
            flat_grads = jnp.concatenate([g.reshape(-1, dim) for g in row_grads[name]])
            tables[name], table_states[name] = state.optimizer.update(dense.buffers[name], state.tables[name],
                                                                      flat_ids, flat_grads)
        new_state = dataclasses.replace(state, dense=new_dense.replace(buffers=tables), tables=table_states)
        return new_state, loss

    return step


def _with_table_rules(config: HybridConfig) -> HybridConfig:
    if config.rules is not None and TABLE_ROWS in config.rules:
        return config
    return dataclasses.replace(config, rules={**TABLE_RULES, **(config.rules or {})})


def sparse_state_shardings(state: SparseTrainState, config: HybridConfig, mesh: Mesh | None = None):
    """A pytree like `state` of NamedShardings: tables and their optimizer state split by rows.

    Dense leaves follow `pdx.train.state_shardings`; tables carry the logical
    name `TABLE_ROWS`, mapped by `TABLE_RULES` (every mesh axis) unless
    `config.rules` maps it; optimizer-state arrays of a table (moments,
    accumulators) are split like its rows, scalars replicated.

    Example:
      >>> import jax
      >>> cfg = pdx.parallel.HybridConfig()                              # doctest: +SKIP
      >>> shardings = rec.sparse_state_shardings(state, cfg)              # doctest: +SKIP
      >>> state = jax.device_put(state, shardings)                        # doctest: +SKIP
    """
    if not isinstance(config, HybridConfig):
        raise TypeError(f"sparse_state_shardings: config must be a pdx.parallel.HybridConfig; "
                        f"got {type(config).__name__}")
    config = _with_table_rules(config)
    mesh = config.mesh() if mesh is None else mesh
    dense = state_shardings(state.dense, config, mesh)
    replicated = NamedSharding(mesh, PartitionSpec())

    def opt_leaf(name):
        rows_spec = dense.buffers[name].spec
        rows = state.dense.buffers[name].shape[0]

        def place(leaf):
            if leaf.ndim >= 1 and leaf.shape[0] == rows:
                return NamedSharding(mesh, PartitionSpec(rows_spec[0] if len(rows_spec) else None))
            return replicated
        return place

    tables = {name: jax.tree.map(opt_leaf(name), opt_state) for name, opt_state in state.tables.items()}
    return dataclasses.replace(state, dense=dense, tables=tables)
