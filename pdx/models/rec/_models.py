"""CTR models over sparse id fields and dense features: DeepFM and Wide&Deep (PaddleRec's layouts).

Inputs, as in PaddleRec: `sparse_inputs` (B, sparse_num_field) int ids, each
already in [0, sparse_feature_number) (hash raw ids with `hash_ids`; all
fields share one table), and `dense_inputs` (B, dense_feature_dim) floats.
Both models return click logits (B, 1); `F.sigmoid` gives probabilities.
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp

import pdx.nn.functional as F
from pdx.models.rec._embedding import SparseEmbedding, as_rngs
from pdx.nn import Layer, LayerList, Linear, ParamAttr
from pdx.nn.initializer import Constant, TruncatedNormal

__all__ = ["CTRConfig", "PRESETS", "DNN", "FM", "DeepFM", "WideDeep"]


@dataclasses.dataclass(frozen=True)
class CTRConfig:
    """Hyperparameters of a CTR model (PaddleRec's names).

    Fields:
      sparse_feature_number: rows of the shared embedding table (hash buckets).
      sparse_feature_dim: embedding size (FM factor size).
      dense_feature_dim: dense (continuous) features per example.
      sparse_num_field: sparse id fields per example.
      layer_sizes: hidden widths of the DNN.

    Example:
      >>> from pdx.models.rec import CTRConfig
      >>> CTRConfig.from_preset("deepfm-tiny", sparse_num_field=4).sparse_num_field
      4
    """

    sparse_feature_number: int = 1000001
    sparse_feature_dim: int = 9
    dense_feature_dim: int = 13
    sparse_num_field: int = 26
    layer_sizes: tuple = (512, 256, 128, 32)

    def __post_init__(self):
        for field in ("sparse_feature_number", "sparse_feature_dim", "sparse_num_field"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"CTRConfig: {field} must be a positive int; got {value!r}")
        if isinstance(self.dense_feature_dim, bool) or not isinstance(self.dense_feature_dim, int) \
                or self.dense_feature_dim < 0:
            raise ValueError(f"CTRConfig: dense_feature_dim must be an int >= 0; got {self.dense_feature_dim!r}")
        sizes = tuple(self.layer_sizes)
        if any(isinstance(s, bool) or not isinstance(s, int) or s < 1 for s in sizes):
            raise ValueError(f"CTRConfig: layer_sizes must be positive ints; got {self.layer_sizes!r}")
        object.__setattr__(self, "layer_sizes", sizes)

    @classmethod
    def from_preset(cls, name: str, **overrides) -> "CTRConfig":
        if name not in PRESETS:
            raise ValueError(f"CTRConfig.from_preset: no preset {name!r}; presets: {sorted(PRESETS)}")
        return dataclasses.replace(PRESETS[name], **overrides)

    def to_dict(self) -> dict:
        return {**dataclasses.asdict(self), "layer_sizes": list(self.layer_sizes)}


# PaddleRec's Criteo configs (1M hash buckets, 26 id fields, 13 dense features) and small ones for tests.
PRESETS = {
    "deepfm": CTRConfig(),
    "deepfm-tiny": CTRConfig(sparse_feature_number=1000, sparse_feature_dim=8, dense_feature_dim=4,
                             sparse_num_field=6, layer_sizes=(32, 16)),
    "wide-deep": CTRConfig(sparse_feature_dim=9, layer_sizes=(512, 256, 128, 32)),
    "wide-deep-tiny": CTRConfig(sparse_feature_number=1000, sparse_feature_dim=8, dense_feature_dim=4,
                                sparse_num_field=6, layer_sizes=(32, 16)),
}


def _config(config) -> CTRConfig:
    if isinstance(config, str):
        return CTRConfig.from_preset(config)
    if not isinstance(config, CTRConfig):
        raise TypeError(f"expected a CTRConfig or a preset name {sorted(PRESETS)}; got {type(config).__name__}")
    return config


def _check_inputs(config: CTRConfig, sparse_inputs, dense_inputs, model: str):
    if sparse_inputs.ndim != 2 or sparse_inputs.shape[1] != config.sparse_num_field:
        raise ValueError(f"{model}: sparse_inputs must be (batch, sparse_num_field={config.sparse_num_field}) ids; "
                         f"got shape {tuple(sparse_inputs.shape)}")
    if not jnp.issubdtype(sparse_inputs.dtype, jnp.integer):
        raise TypeError(f"{model}: sparse_inputs must be integer ids; got dtype {sparse_inputs.dtype}")
    want = (sparse_inputs.shape[0], config.dense_feature_dim)
    if tuple(dense_inputs.shape) != want:
        raise ValueError(f"{model}: dense_inputs must have shape {want} (batch, dense_feature_dim); "
                         f"got {tuple(dense_inputs.shape)}")


class DNN(Layer):
    """Linear + ReLU over `layer_sizes`, then a Linear to one logit: (B, in) -> (B, 1)."""

    def __init__(self, input_dim: int, layer_sizes, *, rngs=None):
        super().__init__()
        sizes = [input_dim, *layer_sizes, 1]
        self._mlp_layers = LayerList([Linear(sizes[i], sizes[i + 1], rngs=rngs) for i in range(len(sizes) - 1)])

    def forward(self, x):
        for i, layer in enumerate(self._mlp_layers):
            x = layer(x)
            if i < len(self._mlp_layers) - 1:
                x = F.relu(x)
        return x


class FM(Layer):
    """Factorization machine over sparse fields plus dense features (PaddleRec's `FM`).

    Each sparse field contributes a first-order weight (`embedding_one`) and a
    factor vector (`embedding`); dense feature j contributes `x_j * dense_w_one[j]`
    and the vector `x_j * dense_w[0, j]`. Returns the first-order term (B, 1), the
    second-order term `0.5 * sum_k((sum_f v_fk)^2 - sum_f v_fk^2)` (B, 1), and the
    field vectors (B, fields + dense_feature_dim, dim) the DNN reads.
    """

    def __init__(self, config: CTRConfig, *, rngs=None):
        super().__init__()
        c = config
        self.embedding_one = SparseEmbedding(c.sparse_feature_number, 1, rngs=rngs)
        self.embedding = SparseEmbedding(c.sparse_feature_number, c.sparse_feature_dim, rngs=rngs)
        init = ParamAttr(initializer=TruncatedNormal(0.0, 1.0 / max(c.dense_feature_dim, 1) ** 0.5))
        self.dense_w_one = self.create_parameter((c.dense_feature_dim,), attr=init, rngs=rngs)
        self.dense_w = self.create_parameter((1, c.dense_feature_dim, c.sparse_feature_dim), attr=init, rngs=rngs)

    def forward(self, sparse_inputs, dense_inputs):
        first = jnp.sum(self.embedding_one(sparse_inputs)[..., 0], axis=1, keepdims=True)      # (B, 1)
        first = first + jnp.sum(dense_inputs * self.dense_w_one[...], axis=1, keepdims=True)
        sparse_v = self.embedding(sparse_inputs)                                                 # (B, F, K)
        dense_v = dense_inputs[:, :, None] * self.dense_w[...]                                  # (B, Dd, K)
        v = jnp.concatenate([sparse_v, dense_v], axis=1)
        second = 0.5 * jnp.sum(jnp.square(jnp.sum(v, axis=1)) - jnp.sum(jnp.square(v), axis=1),
                               axis=1, keepdims=True)                                            # (B, 1)
        return first, second, v


class DeepFM(Layer):
    """DeepFM: logit = FM first order + FM second order + DNN over the FM's field vectors.

    Args:
      config: a `CTRConfig` or a preset name ("deepfm", "deepfm-tiny").
      rngs: keyword-only seed / nnx.Rngs (else the global generator).

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.models.rec import DeepFM
      >>> m = DeepFM("deepfm-tiny", rngs=0)
      >>> m(jnp.zeros((2, 6), jnp.int32), jnp.ones((2, 4))).shape
      (2, 1)
    """

    def __init__(self, config: CTRConfig | str = "deepfm", *, rngs=None):
        super().__init__()
        self.config = _config(config)
        c = self.config
        rngs = as_rngs(rngs)
        self.fm = FM(c, rngs=rngs)
        self.dnn = DNN((c.sparse_num_field + c.dense_feature_dim) * c.sparse_feature_dim, c.layer_sizes, rngs=rngs)

    def forward(self, sparse_inputs, dense_inputs):
        """(B, fields) ids, (B, dense_feature_dim) floats -> (B, 1) click logits."""
        _check_inputs(self.config, sparse_inputs, dense_inputs, "DeepFM")
        first, second, v = self.fm(sparse_inputs, dense_inputs)
        deep = self.dnn(v.reshape(v.shape[0], -1))
        return first + second + deep


class WideDeep(Layer):
    """Wide & Deep: logit = wide (per-id weights + Linear on dense features) + deep (DNN).

    The wide part is a linear model: one weight per sparse id (`wide_embedding`,
    a table of width 1) plus `wide_part`, a Linear over the dense features. The
    deep part embeds each field (`embedding`), concatenates the vectors with the
    dense features and runs the DNN (`deep`).

    Args:
      config: a `CTRConfig` or a preset name ("wide-deep", "wide-deep-tiny").
      rngs: keyword-only seed / nnx.Rngs.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.models.rec import WideDeep
      >>> WideDeep("wide-deep-tiny", rngs=0)(jnp.zeros((2, 6), jnp.int32), jnp.ones((2, 4))).shape
      (2, 1)
    """

    def __init__(self, config: CTRConfig | str = "wide-deep", *, rngs=None):
        super().__init__()
        self.config = _config(config)
        c = self.config
        rngs = as_rngs(rngs)
        self.wide_embedding = SparseEmbedding(c.sparse_feature_number, 1, weight_attr=ParamAttr(initializer=Constant(0.0)),
                                              rngs=rngs)
        self.wide_part = Linear(max(c.dense_feature_dim, 1), 1, rngs=rngs)
        self.embedding = SparseEmbedding(c.sparse_feature_number, c.sparse_feature_dim, rngs=rngs)
        self.deep = DNN(c.sparse_num_field * c.sparse_feature_dim + c.dense_feature_dim, c.layer_sizes, rngs=rngs)

    def forward(self, sparse_inputs, dense_inputs):
        """(B, fields) ids, (B, dense_feature_dim) floats -> (B, 1) click logits."""
        _check_inputs(self.config, sparse_inputs, dense_inputs, "WideDeep")
        b = sparse_inputs.shape[0]
        dense = dense_inputs if self.config.dense_feature_dim else jnp.zeros((b, 1), jnp.float32)
        wide = jnp.sum(self.wide_embedding(sparse_inputs)[..., 0], axis=1, keepdims=True) + self.wide_part(dense)
        emb = self.embedding(sparse_inputs).reshape(b, -1)
        deep = self.deep(jnp.concatenate([emb, dense_inputs.astype(emb.dtype)], axis=1))
        return wide + deep
