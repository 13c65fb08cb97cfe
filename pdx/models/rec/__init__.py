"""pdx.models.rec: click-through-rate models with sharded, sparsely trained embedding tables.

    hash_ids                          raw feature ids -> table rows (seeded murmur3 finalizer, per-field salt)
    SparseEmbedding, lookup           a table whose rows are split over the devices (TABLE_ROWS / TABLE_RULES)
    sparse_adagrad, lazy_adam         row-wise optimizers that touch only looked-up rows (SparseOptimizer)
    dedup_rows                        sum the gradients of repeated ids (one sort, fixed size, + segment_sum)
    SparseTrainState, make_sparse_step, sparse_state_shardings, dense_parameters   the training step
    DeepFM, WideDeep, FM, DNN, CTRConfig, PRESETS   the models (PaddleRec's layouts and names)
"""

from pdx.models._zoo import register
from pdx.models.rec._embedding import TABLE_ROWS, TABLE_RULES, SparseEmbedding, lookup
from pdx.models.rec._hashing import hash_ids
from pdx.models.rec._models import DNN, FM, PRESETS, CTRConfig, DeepFM, WideDeep
from pdx.models.rec._sparse_optim import (
    LazyAdamState,
    SparseAdagradState,
    SparseOptimizer,
    dedup_rows,
    lazy_adam,
    sparse_adagrad,
)
from pdx.models.rec._train import (
    SparseTrainState,
    dense_parameters,
    make_sparse_step,
    sparse_state_shardings,
    table_names,
)

__all__ = [
    "CTRConfig",
    "DNN",
    "DeepFM",
    "FM",
    "LazyAdamState",
    "PRESETS",
    "SparseAdagradState",
    "SparseEmbedding",
    "SparseOptimizer",
    "SparseTrainState",
    "TABLE_ROWS",
    "TABLE_RULES",
    "WideDeep",
    "dedup_rows",
    "dense_parameters",
    "hash_ids",
    "lazy_adam",
    "lookup",
    "make_sparse_step",
    "sparse_adagrad",
    "sparse_state_shardings",
    "table_names",
]


def _preset_builder(cls, preset: str):
    def build(**overrides):
        rngs = overrides.pop("rngs", None)
        return cls(CTRConfig.from_preset(preset, **overrides), rngs=rngs)
    return build


for _name, _cls, _what in (("deepfm", DeepFM, "DeepFM (FM + DNN), PaddleRec's Criteo sizes: 1M-row table, 26 fields, 13 dense"),
                           ("deepfm-tiny", DeepFM, "DeepFM with a 1000-row table (tests)"),
                           ("wide-deep", WideDeep, "Wide & Deep, PaddleRec's Criteo sizes"),
                           ("wide-deep-tiny", WideDeep, "Wide & Deep with a 1000-row table (tests)")):
    _c = PRESETS[_name]
    register(_name, _preset_builder(_cls, _name), family="rec", task="ctr", config=_c.to_dict(), description=_what,
             inputs=(f"sparse_inputs:None,{_c.sparse_num_field}:int32", f"dense_inputs:None,{_c.dense_feature_dim}:float32"))
del _name, _cls, _what, _c
