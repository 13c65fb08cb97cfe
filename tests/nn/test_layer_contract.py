"""Contract over every public layer: nnx.jit forward == eager forward (outputs and
updated state), and the dtype is preserved for float32 and bfloat16.

Inputs reuse the shapes of the differential tests, so most eager ops are
already compiled when the whole suite runs.
"""

import copy
import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

import pdx.nn as nn

ZERO = nn.initializer.Constant(0.0)
A4 = (2, 4, 3, 5)  # the activation tests' input shape, so eager ops are already compiled
D = 8


def _key():
    # The random layers get 'rbg' keys: XLA compiles their bit generator far faster on CPU
    # than threefry's (the default path is covered by test_layer_dropout.py).
    return jax.random.key(0, impl="rbg")


def _enc():
    return nn.TransformerEncoderLayer(D, 2, 12, dropout=0.0, weight_attr=ZERO)


def _dec():
    return nn.TransformerDecoderLayer(D, 2, 12, dropout=0.0, weight_attr=ZERO)


# name -> (factory, input shapes; an "int:<n>" entry means integer ids below n)
CASES = {
    "Linear": (lambda: nn.Linear(5, 3, weight_attr=ZERO), [(2, 4, 5)]),
    "Embedding": (lambda: nn.Embedding(10, 4, padding_idx=0, weight_attr=ZERO), ["int:10"]),
    "Identity": (nn.Identity, [A4]),
    "Flatten": (nn.Flatten, [A4]),
    "Conv1D": (lambda: nn.Conv1D(4, 3, 3, weight_attr=ZERO), [(2, 4, 9)]),
    "Conv2D": (lambda: nn.Conv2D(4, 3, 3, padding=1, weight_attr=ZERO), [(2, 4, 5, 5)]),
    "Conv3D": (lambda: nn.Conv3D(4, 2, 2, weight_attr=ZERO), [(1, 4, 3, 3, 3)]),
    "Conv1DTranspose": (lambda: nn.Conv1DTranspose(4, 2, 3, stride=2, weight_attr=ZERO), [(2, 4, 5)]),
    "Conv2DTranspose": (lambda: nn.Conv2DTranspose(4, 2, 3, stride=2, weight_attr=ZERO), [(2, 4, 3, 3)]),
    "Conv3DTranspose": (lambda: nn.Conv3DTranspose(4, 2, 2, stride=2, weight_attr=ZERO), [(1, 4, 2, 2, 2)]),
    "BatchNorm": (lambda: nn.BatchNorm(4), [A4]),
    "BatchNorm1D": (lambda: nn.BatchNorm1D(4), [(2, 4, 5)]),
    "BatchNorm2D": (lambda: nn.BatchNorm2D(4), [A4]),
    "BatchNorm3D": (lambda: nn.BatchNorm3D(4), [(1, 4, 2, 3, 2)]),
    "LayerNorm": (lambda: nn.LayerNorm(5), [A4]),
    "RMSNorm": (lambda: nn.RMSNorm(5), [A4]),
    "GroupNorm": (lambda: nn.GroupNorm(2, 4), [A4]),
    "InstanceNorm1D": (lambda: nn.InstanceNorm1D(4), [(2, 4, 5)]),
    "InstanceNorm2D": (lambda: nn.InstanceNorm2D(4), [A4]),
    "InstanceNorm3D": (lambda: nn.InstanceNorm3D(4), [(1, 4, 2, 3, 2)]),
    "Dropout": (lambda: nn.Dropout(0.5, rngs=_key()), [A4]),
    "Dropout2D": (lambda: nn.Dropout2D(0.5, rngs=_key()), [A4]),
    "Dropout3D": (lambda: nn.Dropout3D(0.5, rngs=_key()), [(1, 4, 2, 3, 2)]),
    "AlphaDropout": (lambda: nn.AlphaDropout(0.5, rngs=_key()), [A4]),
    "PReLU": (lambda: nn.PReLU(4), [A4]),
    "RReLU": (lambda: nn.RReLU(rngs=_key()), [A4]),
    "Maxout": (lambda: nn.Maxout(2), [A4]),
    "GLU": (lambda: nn.GLU(1), [A4]),
    "MaxPool1D": (lambda: nn.MaxPool1D(2), [(2, 4, 9)]),
    "MaxPool2D": (lambda: nn.MaxPool2D(2), [A4]),
    "MaxPool3D": (lambda: nn.MaxPool3D(2), [(1, 4, 2, 3, 2)]),
    "AvgPool1D": (lambda: nn.AvgPool1D(2), [(2, 4, 9)]),
    "AvgPool2D": (lambda: nn.AvgPool2D(2), [A4]),
    "AvgPool3D": (lambda: nn.AvgPool3D(2), [(1, 4, 2, 3, 2)]),
    "AdaptiveAvgPool1D": (lambda: nn.AdaptiveAvgPool1D(2), [(2, 4, 9)]),
    "AdaptiveAvgPool2D": (lambda: nn.AdaptiveAvgPool2D(2), [A4]),
    "AdaptiveAvgPool3D": (lambda: nn.AdaptiveAvgPool3D(1), [(1, 4, 2, 3, 2)]),
    "AdaptiveMaxPool1D": (lambda: nn.AdaptiveMaxPool1D(2), [(2, 4, 9)]),
    "AdaptiveMaxPool2D": (lambda: nn.AdaptiveMaxPool2D(2), [A4]),
    "AdaptiveMaxPool3D": (lambda: nn.AdaptiveMaxPool3D(1), [(1, 4, 2, 3, 2)]),
    "Sequential": (lambda: nn.Sequential(nn.Linear(5, 3, weight_attr=ZERO), nn.ReLU()), [(2, 4, 5)]),
    "LayerStack": (lambda: nn.LayerStack([nn.Linear(5, 5, weight_attr=ZERO) for _ in range(2)]), [(2, 4, 5)]),
    "MultiHeadAttention": (lambda: nn.MultiHeadAttention(D, 2, dropout=0.3, weight_attr=ZERO, rngs=_key()),
                           [(2, 3, D)]),
    "TransformerEncoderLayer": (_enc, [(2, 5, D)]),
    "TransformerEncoder": (lambda: nn.TransformerEncoder(_enc(), 2), [(2, 5, D)]),
    "TransformerDecoderLayer": (_dec, [(2, 3, D), (2, 5, D)]),
    "TransformerDecoder": (lambda: nn.TransformerDecoder(_dec(), 2), [(2, 3, D), (2, 5, D)]),
    "Transformer": (lambda: nn.Transformer(D, 2, 1, 1, 12, dropout=0.0, weight_attr=ZERO), [(2, 5, D), (2, 3, D)]),
}
# Parameter-free elementwise activations: same call, A4 input.
ACTIVATIONS = ["CELU", "ELU", "GELU", "Hardshrink", "Hardsigmoid", "Hardswish", "Hardtanh", "LeakyReLU",
               "LogSigmoid", "LogSoftmax", "Mish", "ReLU", "ReLU6", "SELU", "Sigmoid", "Silu", "Softmax",
               "Softmax2D", "Softplus", "Softshrink", "Softsign", "Swish", "Tanh", "Tanhshrink", "ThresholdedReLU"]
for _name in ACTIVATIONS:
    CASES[_name] = (getattr(nn, _name), [A4])


class _FirstOutput(nn.Layer):
    """Recurrent layers return (outputs, states); the contract checks the outputs."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, *xs):
        return self.inner(*xs)[0]


RECURRENT = {
    "SimpleRNNCell": (lambda: nn.SimpleRNNCell(5, 3), [(2, 5)]),
    "LSTMCell": (lambda: nn.LSTMCell(5, 3, proj_size=2), [(2, 5)]),
    "GRUCell": (lambda: nn.GRUCell(5, 3), [(2, 5)]),
    "RNN": (lambda: nn.RNN(nn.GRUCell(5, 3), is_reverse=True), [(2, 4, 5)]),
    "BiRNN": (lambda: nn.BiRNN(nn.LSTMCell(5, 3), nn.LSTMCell(5, 3)), [(2, 4, 5)]),
    "SimpleRNN": (lambda: nn.SimpleRNN(5, 3, time_major=True), [(4, 2, 5)]),
    "LSTM": (lambda: nn.LSTM(5, 3, num_layers=2, dropout=0.5, rngs=_key()), [(2, 4, 5)]),
    "GRU": (lambda: nn.GRU(5, 3, direction="bidirect"), [(2, 4, 5)]),
}
for _name, (_make, _shapes) in RECURRENT.items():
    CASES[_name] = (lambda make=_make: _FirstOutput(make()), _shapes)


class _PoolUnpool(nn.Layer):
    """MaxUnPool needs its pooling's mask: pool, then unpool."""

    def __init__(self, n):
        super().__init__()
        self.n = n
        self.unpool = getattr(nn, f"MaxUnPool{n}D")(2)

    def forward(self, x):
        return self.unpool(*getattr(nn.functional, f"max_pool{self.n}d")(x, 2, return_mask=True))


EXTRA = {
    "Pad1D": (lambda: nn.Pad1D([1, 2], mode="reflect"), [(2, 4, 9)]),
    "Pad2D": (lambda: nn.Pad2D(1, mode="replicate"), [A4]),
    "Pad3D": (lambda: nn.Pad3D(1, mode="circular"), [(1, 4, 2, 3, 2)]),
    "Upsample": (lambda: nn.Upsample(scale_factor=2, mode="bilinear"), [A4]),
    "UpsamplingNearest2D": (lambda: nn.UpsamplingNearest2D(size=[4, 6]), [A4]),
    "UpsamplingBilinear2D": (lambda: nn.UpsamplingBilinear2D(scale_factor=2), [A4]),
    "PixelShuffle": (lambda: nn.PixelShuffle(2), [A4]),
    "PixelUnshuffle": (lambda: nn.PixelUnshuffle(2), [(2, 4, 4, 6)]),
    "ChannelShuffle": (lambda: nn.ChannelShuffle(2), [A4]),
    "Unfold": (lambda: nn.Unfold(2), [A4]),
    "Fold": (lambda: nn.Fold([3, 5], 2), [(2, 8, 8)]),
    "Unflatten": (lambda: nn.Unflatten(1, [2, 2]), [A4]),
    "Bilinear": (lambda: nn.Bilinear(5, 3, 2, weight_attr=ZERO), [(2, 5), (2, 3)]),
    "CosineSimilarity": (nn.CosineSimilarity, [A4, A4]),
    "PairwiseDistance": (nn.PairwiseDistance, [A4, A4]),
    "LocalResponseNorm": (lambda: nn.LocalResponseNorm(3), [A4]),
    "SpectralNorm": (lambda: nn.SpectralNorm([4, 3, 5]), [(4, 3, 5)]),
    "SyncBatchNorm": (lambda: nn.SyncBatchNorm(4), [A4]),
    "MaxUnPool1D": (lambda: _PoolUnpool(1), [(2, 4, 8)]),
    "MaxUnPool2D": (lambda: _PoolUnpool(2), [(2, 4, 4, 6)]),
    "MaxUnPool3D": (lambda: _PoolUnpool(3), [(1, 4, 2, 4, 2)]),
    "LPPool1D": (lambda: nn.LPPool1D(2, 3, 2), [(2, 4, 9)]),
    "LPPool2D": (lambda: nn.LPPool2D(1, 2), [A4]),
    "FractionalMaxPool2D": (lambda: nn.FractionalMaxPool2D(2, rngs=_key()), [A4]),
    "FractionalMaxPool3D": (lambda: nn.FractionalMaxPool3D(1, random_u=0.5), [(1, 4, 2, 3, 2)]),
    "FeatureAlphaDropout": (lambda: nn.FeatureAlphaDropout(0.5, rngs=_key()), [A4]),
}
for _kind in ("Zero", "Constant", "Reflection", "Replication", "Circular"):
    _args = (1, 0.5) if _kind == "Constant" else (1,)
    EXTRA[f"{_kind}Pad1D"] = (lambda k=_kind, a=_args: getattr(nn, f"{k}Pad1D")(*a), [(2, 4, 9)])
    EXTRA[f"{_kind}Pad2D"] = (lambda k=_kind, a=_args: getattr(nn, f"{k}Pad2D")(*a), [A4])
    EXTRA[f"{_kind}Pad3D"] = (lambda k=_kind, a=_args: getattr(nn, f"{k}Pad3D")(*a), [(1, 4, 2, 3, 2)])
CASES.update(EXTRA)
class _LossOn(nn.Layer):
    """A loss layer fed valid arguments derived from the contract's random inputs."""

    def __init__(self, loss, prepare):
        super().__init__()
        self.loss = loss
        self.prepare = prepare

    def forward(self, *xs):
        out = self.loss(*self.prepare(*xs))
        return out[1] if isinstance(out, tuple) else out


_LENGTHS = (jnp.array([4, 3]), jnp.array([2, 1]))
LOSSES = {
    "CrossEntropyLoss": (nn.CrossEntropyLoss, [(2, 3, 4), "int:4"]),
    "NLLLoss": (lambda: nn.NLLLoss(reduction="none"), [(2, 4, 3), "int:4"]),
    "BCELoss": (lambda: _LossOn(nn.BCELoss(), lambda x, y: (jax.nn.sigmoid(x), jax.nn.sigmoid(y))), [A4, A4]),
    "GaussianNLLLoss": (lambda: _LossOn(nn.GaussianNLLLoss(), lambda x, y, v: (x, y, jnp.abs(v))), [A4, A4, A4]),
    "CosineEmbeddingLoss": (lambda: _LossOn(nn.CosineEmbeddingLoss(), lambda a, b, y: (a, b, 1 - 2 * (y[:, 0] % 2))),
                            [(2, 3), (2, 3), "int:2"]),
    "MultiMarginLoss": (lambda: _LossOn(nn.MultiMarginLoss(), lambda x, y: (x, y[:, 0])), [(2, 3), "int:3"]),
    "MultiLabelMarginLoss": (nn.MultiLabelMarginLoss, [(2, 3), "int:3"]),
    "HSigmoidLoss": (lambda: _LossOn(nn.HSigmoidLoss(3, 5), lambda x, y: (x, y[:, 0])), [(2, 3), "int:5"]),
    "AdaptiveLogSoftmaxWithLoss": (lambda: _LossOn(nn.AdaptiveLogSoftmaxWithLoss(8, 6, [2, 4], div_value=2.0),
                                                   lambda x, y: (x, y[:, 0])), [(2, 8), "int:6"]),
    "CTCLoss": (lambda: _LossOn(nn.CTCLoss(), lambda x, y: (x, y[:, :2] + 1, *_LENGTHS)), [(4, 2, 5), "int:4"]),
    "RNNTLoss": (lambda: _LossOn(nn.RNNTLoss(), lambda x, y: (jax.nn.log_softmax(x, -1), y[:, :2] + 1, *_LENGTHS)),
                 [(2, 4, 3, 5), "int:4"]),
}
for _name in ["MSELoss", "L1Loss", "SmoothL1Loss", "BCEWithLogitsLoss", "KLDivLoss", "SoftMarginLoss",
              "HingeEmbeddingLoss", "MultiLabelSoftMarginLoss", "PoissonNLLLoss"]:
    LOSSES[_name] = (getattr(nn, _name), [A4, A4])
for _name in ["MarginRankingLoss", "TripletMarginLoss", "TripletMarginWithDistanceLoss"]:
    LOSSES[_name] = (getattr(nn, _name), [(2, 3)] * 3)
CASES.update(LOSSES)
NOT_CALLABLE = {"Layer", "LayerList", "LayerDict", "RNNCellBase",  # containers without a forward, and the bases
                "ParameterList", "ParameterDict"}
# bfloat16 runs over one layer of each kind (compiling every layer twice costs more than it finds).
BF16 = ["AdaptiveAvgPool2D", "AvgPool2D", "BatchNorm2D", "Conv2D", "Conv2DTranspose", "Dropout", "Embedding", "GELU",
        "GroupNorm", "InstanceNorm2D", "LayerNorm", "Linear", "MaxPool2D", "MultiHeadAttention", "PReLU", "RMSNorm",
        "Softmax", "TransformerEncoderLayer"]


def _public_layer_classes():
    return sorted(n for n in nn.__all__ if inspect.isclass(getattr(nn, n)) and issubclass(getattr(nn, n), nn.Layer))


def test_every_public_layer_is_in_the_contract():
    # A second spelling of a class (Conv2d is Conv2D) is covered by the first.
    covered = {id(getattr(nn, n)) for n in set(CASES) | NOT_CALLABLE if hasattr(nn, n)}
    missing = {n for n in _public_layer_classes() if id(getattr(nn, n)) not in covered}
    assert not missing, f"add these layers to CASES: {sorted(missing)}"


def test_every_layer_takes_keyword_only_rngs():
    exempt = {id(getattr(nn, n)) for n in NOT_CALLABLE | {"Sequential", "Identity", "LayerStack"} if hasattr(nn, n)}
    for name in [n for n in _public_layer_classes() if id(getattr(nn, n)) not in exempt]:
        param = inspect.signature(getattr(nn, name).__init__).parameters.get("rngs")
        assert param is not None and param.kind is inspect.Parameter.KEYWORD_ONLY, name
        assert param.default is None, name


def _inputs(specs, dtype, rng):
    out = []
    for spec in specs:
        if isinstance(spec, str):
            out.append(jnp.asarray(rng.integers(0, int(spec.split(":")[1]), (2, 3))))
        else:
            out.append(jnp.asarray(rng.standard_normal(spec), dtype=dtype))
    return out


def _leaves(layer):
    vals = jax.tree.leaves(nnx.state(layer))
    return [np.asarray(jax.random.key_data(v) if jnp.issubdtype(v.dtype, jax.dtypes.prng_key) else v, np.float32)
            for v in vals]


@nnx.jit
def _run_all(layers, inputs):
    return [layer(*xs) for layer, xs in zip(layers, inputs)]


CHUNK = 16  # layers per compiled program: fewer, mid-sized programs compile fastest


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_jit_matches_eager_and_keeps_dtype(rng, dtype):
    names = sorted(CASES) if dtype == "float32" else BF16
    layers = []
    for name in names:
        layer = CASES[name][0]()
        if dtype != "float32":
            layer.to(dtype=dtype)
        layers.append(layer)
    inputs = [_inputs(CASES[name][1], dtype, rng) for name in names]
    # Deep copies start from the same state, RNG keys included. A LayerList of more than
    # ten layers also checks that container order survives nnx's graph round trip.
    jitted = [copy.deepcopy(layer) for layer in layers]
    compiled = []
    for start in range(0, len(names), CHUNK):
        chunk = slice(start, start + CHUNK)
        compiled += _run_all(nn.LayerList(jitted[chunk]), inputs[chunk])
    for name, layer, copied, xs, got in zip(names, layers, jitted, inputs, compiled):
        assert got.dtype == jnp.dtype(dtype), (name, got.dtype)
        if dtype == "float32":  # eager bfloat16 would compile every op again; the jit run checks the dtype
            want = layer(*xs)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=name)
            for a, b in zip(_leaves(layer), _leaves(copied)):
                np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6, err_msg=f"{name} state")
        else:
            assert bool(jnp.all(jnp.isfinite(got.astype(jnp.float32)))), name


def test_dtype_argument():
    for layer in [nn.Linear(2, 3, dtype="bfloat16", weight_attr=ZERO), nn.Conv2D(2, 3, 1, dtype="bfloat16"),
                  nn.LayerNorm(3, dtype="bfloat16"), nn.Embedding(4, 2, dtype="bfloat16", weight_attr=ZERO),
                  nn.BatchNorm2D(2, dtype="bfloat16")]:
        assert {v.dtype for v in layer.state_dict().values()} == {jnp.dtype("bfloat16")}, type(layer).__name__
