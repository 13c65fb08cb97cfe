"""IREE exports: batch buckets in one module, flags chosen from the program, rewrites checked on XLA.

References are independent of the code under test: a brute-force search for
batch plans, numpy forward passes, `jax.lax.conv_general_dilated` for the
convolution rewrite.
"""

import itertools
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx
import pdx.export
from pdx.export._iree import choose_flags, plan_batches, program_kind
from pdx.jit import InputSpec
from pdx.kernels import rewrite_program


# -- batch plans ---------------------------------------------------------------------------------

def _brute_force_cost(n, buckets, overhead=1):
    """Least (rows computed + overhead per call, calls) over all bucket multisets covering n rows."""
    best = None
    for calls in range(1, n + 1):
        for combo in itertools.combinations_with_replacement(buckets, calls):
            if sum(combo) >= n and sum(combo) - max(combo) < n:  # only one call may be padded
                cost = (sum(combo) + overhead * calls, calls)
                best = cost if best is None or cost < best else best
    return best


@pytest.mark.parametrize("buckets", [(1, 4, 16), (1, 4), (2, 3), (1,), (8,)])
def test_plan_batches_is_cheapest_cover(buckets):
    for n in range(1, 41):
        plan = plan_batches(n, buckets)
        assert set(plan) <= set(buckets)
        assert sum(plan) >= n and sum(plan[:-1]) < n, (n, plan)  # only the last call is padded
        assert (sum(plan) + len(plan), len(plan)) == _brute_force_cost(n, buckets), (n, plan)


def test_plan_batches_large_batch_uses_the_largest_bucket():
    plan = plan_batches(1000, (1, 4, 16))
    assert plan.count(16) == 62 and sum(plan) == 1000


# -- flags from the program ----------------------------------------------------------------------

def _mlir(fn, *shapes):
    return jax.export.export(jax.jit(fn), platforms=("cpu",))(
        *[jax.ShapeDtypeStruct(s, jnp.float32) for s in shapes]).mlir_module()


def test_program_kind_and_flags_follow_the_convolutions():
    dense = _mlir(lambda x, w: x @ w, (2, 3), (3, 4))
    conv = _mlir(lambda x, w: jax.lax.conv(x, w, (1, 1), "SAME"), (1, 4, 8, 8), (6, 4, 3, 3))
    depthwise = _mlir(lambda x, w: jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", feature_group_count=4),
                      (1, 4, 8, 8), (4, 1, 3, 3))
    assert [program_kind(m) for m in (dense, conv, depthwise)] == ["dense", "conv", "grouped_conv"]
    im2col = "--iree-global-opt-use-im2col-for-convs"
    assert im2col in choose_flags("iree-llvm-cpu", conv)
    assert im2col not in choose_flags("iree-llvm-cpu", depthwise)
    assert "--iree-llvmcpu-target-cpu=host" in choose_flags("iree-llvm-cpu", depthwise)
    assert choose_flags("iree-arm64-android", conv, ["--iree-opt-level=O2"])[1:] == ("--iree-opt-level=O2",)
    with pytest.raises(ValueError, match="iree.flags"):
        choose_flags("iree-llvm-cpu", conv, "--iree-opt-level=O2")


# -- the convolution rewrite ---------------------------------------------------------------------

@pytest.mark.parametrize("layout,stride,padding,dilation", [
    ("NCHW", (1, 1), ((1, 1), (1, 1)), (1, 1)),
    ("NCHW", (2, 2), ((1, 0), (2, 1)), (1, 1)),
    ("NHWC", (2, 1), ((0, 0), (0, 0)), (2, 1)),
])
def test_conv_as_patches_matches_lax_conv(layout, stride, padding, dilation, rng):
    x = rng.standard_normal((2, 5, 9, 8) if layout == "NCHW" else (2, 9, 8, 5)).astype(np.float32)
    w = rng.standard_normal((7, 5, 3, 2) if layout == "NCHW" else (3, 2, 5, 7)).astype(np.float32)
    spec = ("NCHW", "OIHW", "NCHW") if layout == "NCHW" else ("NHWC", "HWIO", "NHWC")

    def conv(x, w):
        return jax.nn.relu(jax.lax.conv_general_dilated(x, w, stride, padding, rhs_dilation=dilation,
                                                        dimension_numbers=spec))

    want = np.asarray(conv(x, w))
    got = np.asarray(jax.jit(rewrite_program(conv))(x, w))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    low = np.asarray(jax.jit(rewrite_program(conv, precision="bfloat16"))(x, w))
    assert low.dtype == np.float32
    assert 0 < np.abs(low - want).max() <= 2e-2 * np.abs(want).max()  # bfloat16 operands, float32 sums
    text = str(jax.make_jaxpr(rewrite_program(conv))(x, w))
    assert "conv_general_dilated_patches" in text or "conv_general_dilated" in text
    assert "dot_general" in text


def test_grouped_conv_is_left_alone(rng):
    x, w = rng.standard_normal((1, 4, 6, 6)).astype(np.float32), rng.standard_normal((4, 1, 3, 3)).astype(np.float32)

    def depthwise(x, w):
        return jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", feature_group_count=4)

    assert "dot_general" not in str(jax.make_jaxpr(rewrite_program(depthwise))(x, w))
    np.testing.assert_allclose(jax.jit(rewrite_program(depthwise))(x, w), depthwise(x, w), rtol=1e-6)


# -- one artifact, any batch ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def mlp():
    pdx.seed(3)
    net = pdx.nn.Sequential(pdx.nn.Linear(6, 16), pdx.nn.ReLU(), pdx.nn.Linear(16, 3))
    net.eval()
    w = {k: np.asarray(v, np.float64) for k, v in net.state_dict().items()}

    def reference(x):
        return np.maximum(x @ w["0.weight"] + w["0.bias"], 0) @ w["2.weight"] + w["2.bias"]

    return net, reference


def test_buckets_cover_any_batch_from_one_module(mlp, tmp_path, rng):
    net, reference = mlp
    path = pdx.export.export(net, tmp_path / "mlp", [InputSpec([None, 6], "float32", "x")],
                             targets=("iree-llvm-cpu",), iree={"batch_split": True, "batch_sizes": (4, 1), "flags": ["--iree-opt-level=O2"]},
                             differentiable=False)
    info = json.loads((path / "manifest.json").read_text())["targets"]["iree-llvm-cpu"]
    assert [b["batch"] for b in info["buckets"]] == [1, 4]
    assert info["buckets"][1]["input_shapes"] == [[4, 6]] and info["dims"] == {"batch": 1}
    assert info["flags"] == ["--iree-llvmcpu-target-cpu=host", "--iree-opt-level=O2"]
    assert sorted(p.name for p in path.glob("*.vmfb")) == ["iree-llvm-cpu.vmfb"]
    iree = pdx.export.load(path, runtime="iree")
    assert iree.input_specs[0].shape[0] is None
    for batch in (1, 3, 4, 17):
        x = rng.standard_normal((batch, 6)).astype(np.float32)
        np.testing.assert_allclose(iree(x), reference(x), rtol=1e-5, atol=1e-5)


def test_a_none_batch_runs_any_batch_without_flags(mlp, tmp_path, rng):
    """batch_split="auto" (the default): rows checked independent on XLA at export, so any batch runs;
    a function that mixes rows is not split."""
    net, reference = mlp
    path = pdx.export.export(net, tmp_path / "auto", [InputSpec([None, 6], "float32", "x")],
                             targets=("xla", "iree-llvm-cpu"), differentiable=False)
    info = json.loads((path / "manifest.json").read_text())["targets"]["iree-llvm-cpu"]
    assert info["batch_split"] is True and [b["batch"] for b in info["buckets"]] == [1]
    iree, xla = pdx.export.load(path, runtime="iree"), pdx.export.load(path)
    for batch in (1, 3, 17):
        x = rng.standard_normal((batch, 6)).astype(np.float32)
        np.testing.assert_allclose(iree(x), reference(x), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(iree(x), xla(x), rtol=1e-5, atol=1e-5)
    mixed = pdx.export.export(lambda x: x - x.mean(0, keepdims=True), tmp_path / "mixed",
                              [InputSpec([None, 6], "float32", "x")], targets=("iree-llvm-cpu",), differentiable=False)
    assert json.loads((mixed / "manifest.json").read_text())["targets"]["iree-llvm-cpu"]["batch_split"] is False
    with pytest.raises(ValueError, match="iree.batch_split"):
        pdx.export.export(net, tmp_path / "bad", [InputSpec([None, 6], "float32", "x")], targets=("iree-llvm-cpu",),
                          iree={"batch_split": "yes"})


def test_without_batch_split_only_bucket_sizes_run(mlp, tmp_path, rng):
    net, reference = mlp
    path = pdx.export.export(net, tmp_path / "mlp", [InputSpec([None, 6], "float32", "x")],
                             targets=("iree-llvm-cpu",), iree={"batch_sizes": (2, 5), "params": "inline", "batch_split": False},
                             differentiable=False)
    info = json.loads((path / "manifest.json").read_text())["targets"]["iree-llvm-cpu"]
    assert info["params"] == "inline" and info["batch_split"] is False
    iree = pdx.export.load(path, runtime="iree")
    for batch in (2, 5):
        x = rng.standard_normal((batch, 6)).astype(np.float32)
        np.testing.assert_allclose(iree(x), reference(x), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match=r"batch size 3 .*\[2, 5\]"):
        iree(np.zeros((3, 6), np.float32))


def test_bad_iree_options_name_the_argument(mlp, tmp_path):
    net, _ = mlp
    spec = [InputSpec([None, 6], "float32", "x")]
    for kwargs, match in [(dict(batch_sizes=(0,)), "iree.batch_sizes"),
                          (dict(dims={"batch": 2}, batch_sizes=(1,)), "iree.batch_sizes only"),
                          (dict(params="constants"), "iree.params"),
                          (dict(conv="im2col"), "iree.conv"),
                          (dict(precision="float16"), "iree.precision"),
                          (dict(precision="bfloat16", params="arguments"), "iree.params='inline'")]:
        with pytest.raises(ValueError, match=match):
            pdx.export.export(net, tmp_path / "bad", spec, targets=("iree-llvm-cpu",), iree=kwargs)
    # Earlier flat arguments and unknown fields name the record form.
    with pytest.raises(TypeError, match=r"iree_batch_split=\.\.\. is iree=IreeOptions\(batch_split=\.\.\.\)"):
        pdx.export.export(net, tmp_path / "bad", spec, iree_batch_split=True)
    with pytest.raises(TypeError, match=r"unknown field\(s\) \['batch'\]; IreeOptions has \['dims'"):
        pdx.export.export(net, tmp_path / "bad", spec, iree={"batch": 2})


def test_batchnorm_folds_into_the_convolution(rng, tmp_path):
    pdx.seed(5)
    net = pdx.nn.Sequential(pdx.nn.Conv2D(3, 8, 3, padding=1, bias_attr=False), pdx.nn.BatchNorm2D(8),
                            pdx.nn.ReLU(), pdx.nn.Conv2D(8, 4, 1), pdx.nn.BatchNorm2D(4))
    net.eval()
    state = {k: np.asarray(v) for k, v in net.state_dict().items()}
    for k in state:  # non-trivial statistics, so the fold has something to get wrong
        if k.endswith(("_mean", "bias")) or (k.endswith("weight") and state[k].ndim == 1):
            state[k] = rng.uniform(-1, 1, state[k].shape).astype(np.float32)
        elif k.endswith("_variance"):
            state[k] = rng.uniform(0.5, 2, state[k].shape).astype(np.float32)
    net.set_state_dict(state)
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)

    def reference(x):  # numpy: conv, (x - mean) / sqrt(var + eps) * w + b, relu, 1x1 conv, BN
        def bn(y, i):
            shape = (1, -1, 1, 1)
            return ((y - state[f"{i}._mean"].reshape(shape)) / np.sqrt(state[f"{i}._variance"].reshape(shape) + 1e-5)
                    * state[f"{i}.weight"].reshape(shape) + state[f"{i}.bias"].reshape(shape))
        w0 = state["0.weight"]
        xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
        y = np.zeros((2, 8, 6, 6))
        for i, j in itertools.product(range(3), range(3)):
            y += np.einsum("nchw,oc->nohw", xp[:, :, i:i + 6, j:j + 6], w0[:, :, i, j])
        y = np.maximum(bn(y, 1), 0)
        y = np.einsum("nchw,oc->nohw", y, state["3.weight"][:, :, 0, 0]) + state["3.bias"].reshape(1, -1, 1, 1)
        return bn(y, 4)

    from pdx.export._export import _Traced

    traced = _Traced(net)
    params = tuple(np.asarray(v.get_value()) for _, v, _ in traced.params)
    folded = rewrite_program(traced.program, conv="native", fold_scale=True, weights_argnum=0)
    want = reference(x.astype(np.float64))
    np.testing.assert_allclose(jax.jit(folded)(params, x), want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
    jaxpr = str(jax.make_jaxpr(folded)(params, x))
    activation_muls = [line for line in jaxpr.splitlines() if "= mul" in line and ":f32[2," in line]
    assert activation_muls == []  # both BatchNorms' scales went into the weights
    unfolded = str(jax.make_jaxpr(traced.program)(params, x))
    assert len([line for line in unfolded.splitlines() if "= mul" in line and ":f32[2," in line]) == 2

    path = pdx.export.export(net, tmp_path / "convbn", [InputSpec([None, 3, 6, 6], "float32", "x")],
                             targets=("iree-llvm-cpu",), iree={"batch_split": True, "batch_sizes": (2,), "fold_batchnorm": True, "params": "inline"},
                             differentiable=False)
    info = json.loads((path / "manifest.json").read_text())["targets"]["iree-llvm-cpu"]
    assert info["fold_batchnorm"] is True and 0 <= info["max_error"] <= 1e-4
    got = pdx.export.load(path, runtime="iree")(x[:1])
    np.testing.assert_allclose(got, want[:1], rtol=1e-4, atol=1e-4 * np.abs(want).max())
