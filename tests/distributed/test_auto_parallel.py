"""Paddle's auto-parallel API (pdx.distributed) trains exactly like one device.

The program below is written the way Paddle's auto-parallel llama tutorial
writes it (`import paddle; import paddle.distributed as dist`, a small
llama-style model, `shard_layer` with a `shard_fn`, `shard_optimizer`,
`shard_dataloader`, `to_static`; and a second program with `parallelize`).
Losses and parameters after three steps on the 8 host devices must equal a
plain one-device run within 1e-5; placements read back must be the ones
asked for; `reshard` between every pair of placements keeps the value.
"""

import math

import jax
import numpy as np
import pytest

import pdx as paddle
import pdx.distributed as dist
import pdx.nn.functional as F
from pdx import nn

VOCAB, HIDDEN, HEADS, FFN, LAYERS, BATCH, SEQ, STEPS = 32, 16, 4, 32, 2, 8, 8, 3


# -- the program (Paddle's tutorial style) ---------------------------------------------------------
class LlamaRMSNorm(nn.Layer):
    def __init__(self, hidden):
        super().__init__()
        self.weight = self.create_parameter([hidden], default_initializer=nn.initializer.Constant(1.0))

    def forward(self, x):
        variance = x.pow(2).mean(-1, keepdim=True)
        return x * paddle.rsqrt(variance + 1e-6) * self.weight


class LlamaAttention(nn.Layer):
    def __init__(self):
        super().__init__()
        self.q_proj = nn.Linear(HIDDEN, HIDDEN, bias_attr=False)
        self.k_proj = nn.Linear(HIDDEN, HIDDEN, bias_attr=False)
        self.v_proj = nn.Linear(HIDDEN, HIDDEN, bias_attr=False)
        self.o_proj = nn.Linear(HIDDEN, HIDDEN, bias_attr=False)

    def forward(self, x):
        b, s, h = x.shape
        d = h // HEADS
        q = self.q_proj(x).reshape([b, s, HEADS, d]).transpose([0, 2, 1, 3])
        k = self.k_proj(x).reshape([b, s, HEADS, d]).transpose([0, 2, 1, 3])
        v = self.v_proj(x).reshape([b, s, HEADS, d]).transpose([0, 2, 1, 3])
        scores = paddle.matmul(q, k, transpose_y=True) / math.sqrt(d)
        causal = paddle.tril(paddle.ones([s, s])).astype("bool")
        scores = paddle.where(causal, scores, paddle.full_like(scores, -1e9))
        out = paddle.matmul(F.softmax(scores, axis=-1), v)
        return self.o_proj(out.transpose([0, 2, 1, 3]).reshape([b, s, h]))


class LlamaMLP(nn.Layer):
    def __init__(self):
        super().__init__()
        self.gate_proj = nn.Linear(HIDDEN, FFN, bias_attr=False)
        self.up_proj = nn.Linear(HIDDEN, FFN, bias_attr=False)
        self.down_proj = nn.Linear(FFN, HIDDEN, bias_attr=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Layer):
    def __init__(self):
        super().__init__()
        self.input_layernorm = LlamaRMSNorm(HIDDEN)
        self.self_attn = LlamaAttention()
        self.post_attention_layernorm = LlamaRMSNorm(HIDDEN)
        self.mlp = LlamaMLP()

    def forward(self, x):
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaModel(nn.Layer):
    def __init__(self, stacked):
        super().__init__()
        self.embed_tokens = nn.Embedding(VOCAB, HIDDEN)
        layers = [LlamaDecoderLayer() for _ in range(LAYERS)]
        # stacked: one LayerStack whose (N, ...) weights a pipeline splits over "pp"
        self.layers = nn.LayerStack(layers) if stacked else nn.LayerList(layers)
        self.norm = LlamaRMSNorm(HIDDEN)

    def forward(self, ids):
        x = self.embed_tokens(ids)
        x = paddle.parallel.run_layers(self.layers, x)
        return self.norm(x)


class LlamaForCausalLM(nn.Layer):
    def __init__(self, stacked=False):
        super().__init__()
        self.llama = LlamaModel(stacked)
        self.lm_head = nn.Linear(HIDDEN, VOCAB, bias_attr=False)

    def forward(self, ids):
        return self.lm_head(self.llama(ids))


def loss_fn(logits, labels):
    return F.cross_entropy(logits.reshape([-1, VOCAB]), labels.reshape([-1]))


def build(stacked=False):
    paddle.seed(2024)
    model = LlamaForCausalLM(stacked)
    # Momentum, not Adam: Adam's 1/sqrt(v) turns reduction-order noise in tiny gradients into full steps
    opt = paddle.optimizer.Momentum(learning_rate=0.1, momentum=0.9, parameters=model, weight_decay=0.01)
    return model, opt


def batches():
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, VOCAB, (STEPS, BATCH, SEQ + 1)).astype(np.int32)
    return [[t[:, :-1], t[:, 1:]] for t in tokens]


@paddle.jit
def train_step(model, opt, ids, labels):
    loss, grads = paddle.value_and_grad(lambda m: loss_fn(m(ids), labels))(model)
    opt.step(grads)
    return loss


def state(model):
    return {k: np.asarray(v) for k, v in model.state_dict().items()}


@pytest.fixture(scope="module")
def reference():
    """One device, no placements: losses and parameters after STEPS steps, for both layer layouts."""
    out = {}
    for stacked in (False, True):
        model, opt = build(stacked)
        losses = [float(train_step(model, opt, x, y)) for x, y in batches()]
        out[stacked] = losses, state(model)
    return out


def assert_same(losses, params, ref):
    ref_losses, ref_params = ref
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5, atol=1e-5)
    assert sorted(params) == sorted(ref_params)
    for name in ref_params:
        np.testing.assert_allclose(params[name], ref_params[name], rtol=1e-5, atol=1e-5, err_msg=name)


# -- program 1: shard_layer / shard_optimizer / shard_dataloader / to_static on a 2 x 4 dp x mp mesh ----
def test_shard_layer_program_matches_one_device(reference):
    mesh = dist.ProcessMesh([[0, 1, 2, 3], [4, 5, 6, 7]], dim_names=["dp", "mp"])

    def shard_fn(layer_name, layer, process_mesh):
        if layer_name.endswith(("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj")) or layer_name == "lm_head":
            layer.weight = dist.shard_tensor(layer.weight, process_mesh, [dist.Replicate(), dist.Shard(1)])
        elif layer_name.endswith(("o_proj", "down_proj")):
            layer.weight = dist.shard_tensor(layer.weight, process_mesh, [dist.Replicate(), dist.Shard(0)])
        elif layer_name.endswith("embed_tokens"):
            layer.weight = dist.shard_tensor(layer.weight, process_mesh, [dist.Replicate(), dist.Shard(1)])

    def input_fn(inputs, process_mesh):  # runs inside the compiled step: a sharding constraint
        return (dist.reshard(inputs[0], process_mesh, [dist.Shard(0), dist.Replicate()]),)

    model, opt = build()
    model = dist.shard_layer(model, mesh, shard_fn, input_fn=input_fn)
    opt = dist.shard_optimizer(opt, dist.ShardingStage2("dp", mesh))
    loader = dist.shard_dataloader(batches(), meshes=mesh, shard_dims="dp")
    dist_model = dist.to_static(model, loader, loss_fn, opt)
    dist_model.train()
    losses = []
    for ids, labels in loader:
        assert ids.placements == [dist.Shard(0), dist.Replicate()]
        losses.append(float(dist_model(ids, labels)))
    assert_same(losses, state(model), reference[False])

    # placements survive the compiled steps; ZeRO stage 2 splits the momentum over "dp" too
    attn = model.llama.layers[0].self_attn
    assert attn.q_proj.weight.get_value().placements == [dist.Replicate(), dist.Shard(1)]
    assert attn.o_proj.weight.get_value().placements == [dist.Replicate(), dist.Shard(0)]
    assert model.llama.norm.weight.get_value().placements == [dist.Replicate(), dist.Replicate()]
    # column-parallel q/k/v (mp on dim 1) get dp on dim 0, row-parallel o_proj the other way round
    velocity = [s for s in jax.tree.leaves(opt.opt_state) if s.shape == (HIDDEN, HIDDEN)]
    assert len(velocity) == 4 * LAYERS
    assert sorted(str(v.placements) for v in velocity) == sorted(
        [str([dist.Shard(0), dist.Shard(1)])] * 3 * LAYERS + [str([dist.Shard(1), dist.Shard(0)])] * LAYERS)
    assert paddle._placement.placement_of(attn.q_proj.weight).grad.spec == jax.sharding.PartitionSpec("dp", "mp")

    dist_model.eval()
    ids, labels = batches()[0]
    eval_loss = float(dist_model(ids, labels))
    assert np.isfinite(eval_loss) and eval_loss < reference[False][0][0]  # trained: lower than step 0's loss
    dist_model.predict()
    assert dist_model(ids).shape == (BATCH, SEQ, VOCAB)


# -- program 2: parallelize on a 2 x 2 x 2 dp x mp x pp mesh --------------------------------------------
def test_parallelize_program_matches_one_device(reference):
    mesh = dist.ProcessMesh(np.arange(8).reshape(2, 2, 2).tolist(), dim_names=["dp", "mp", "pp"])
    dist.set_mesh(mesh)
    seen = []

    def record_output(process_mesh):
        def hook(layer, inputs, output):
            seen.append((type(layer).__name__, tuple(output.shape)))
            return dist.reshard(output, process_mesh, [dist.Shard(0), dist.Replicate(), dist.Replicate()])

        return hook

    plan = {
        "llama.embed_tokens": dist.ColWiseParallel(),
        "llama.layers.*.self_attn.q_proj": dist.ColWiseParallel(),
        "llama.layers.*.self_attn.k_proj": dist.ColWiseParallel(),
        "llama.layers.*.self_attn.v_proj": dist.ColWiseParallel(),
        "llama.layers.*.self_attn.o_proj": dist.RowWiseParallel(),
        "llama.layers.*.mlp.gate_proj": dist.ColWiseParallel(),
        "llama.layers.*.mlp.up_proj": dist.ColWiseParallel(),
        "llama.layers.*.mlp.down_proj": dist.RowWiseParallel(),
        "lm_head.weight": dist.ColWiseParallel(),
        "lm_head": dist.PrepareLayerOutput(record_output),
    }
    config = {
        "dp_config": {"sharding_level": 3},
        "mp_config": {"parallelize_plan": plan},
        "pp_config": {"split_spec": "llama.layers", "accumulate_steps": 2},
    }
    model, opt = build(stacked=True)
    model, opt = dist.parallelize(model, opt, config=config)
    q = model.llama.layers.block.self_attn.q_proj.weight  # (LAYERS, HIDDEN, HIDDEN), stage s holds layer s
    assert q.get_value().placements == [dist.Shard(1), dist.Shard(2), dist.Shard(0)]  # dp: ZeRO-3 (FSDP)
    assert model.llama.layers.block.mlp.down_proj.weight.get_value().placements == [
        dist.Shard(2), dist.Shard(1), dist.Shard(0)]
    assert model.lm_head.weight.get_value().placements == [dist.Shard(0), dist.Shard(1), dist.Replicate()]

    losses = []
    for ids, labels in batches():
        ids = dist.shard_tensor(ids, mesh, [dist.Shard(0), dist.Replicate(), dist.Replicate()])
        labels = dist.shard_tensor(labels, mesh, [dist.Shard(0), dist.Replicate(), dist.Replicate()])
        losses.append(float(train_step(model, opt, ids, labels)))
    assert_same(losses, state(model), reference[True])
    assert seen and seen[0] == ("Linear", (BATCH, SEQ, VOCAB))
    assert q.get_value().placements == [dist.Shard(1), dist.Shard(2), dist.Shard(0)]

    # the compiled step ran the pipeline: the stages pass activations round the "pp" ring
    emitted = {c.kind for c in paddle.parallel.collectives(train_step.lower(model, opt, ids, labels).compile())}
    assert "collective-permute" in emitted, emitted


# -- placements and reshard --------------------------------------------------------------------------
def test_placements_read_back_and_reshard_every_pair():
    mesh = dist.ProcessMesh([[0, 1, 2, 3], [4, 5, 6, 7]], dim_names=["dp", "mp"])
    x = np.random.default_rng(1).standard_normal((8, 8)).astype(np.float32)
    kinds = [dist.Shard(0), dist.Shard(1), dist.Replicate(), dist.Partial()]
    all_placements = [[a, b] for a in kinds for b in kinds]

    for placements in all_placements:
        t = dist.shard_tensor(x, mesh, placements)
        assert dist.get_placements(t) == placements, placements
        if not any(p.is_partial() for p in placements):
            assert t.placements == placements and t.process_mesh == mesh
            assert t.sharding.spec == dist._placements.placements_to_spec(placements, 2, mesh.dim_names)
        np.testing.assert_allclose(np.asarray(dist.unshard_dtensor(t)), x, rtol=1e-6, atol=1e-6)

    for src in all_placements:
        t = dist.shard_tensor(x, mesh, src)
        for dst in all_placements:
            moved = dist.reshard(t, mesh, dst)
            assert dist.get_placements(moved) == dst
            value = np.asarray(dist.unshard_dtensor(moved))
            np.testing.assert_allclose(value, x, rtol=1e-5, atol=1e-5, err_msg=f"{src} -> {dst}")

    # Partial is a real unreduced value: parts 1..8 on the 8 devices reduce to their sum / max
    parts = np.arange(1, 9, dtype=np.float32).reshape(2, 4, 1, 1) * np.ones((2, 4, 8, 8), np.float32)
    sharding = jax.sharding.NamedSharding(mesh.jax_mesh, jax.sharding.PartitionSpec("dp", "mp"))
    both = dist.PartialArray(jax.device_put(parts, sharding), mesh, [dist.Partial(), dist.Partial()])
    summed = dist.reshard(both, mesh, [dist.Replicate(), dist.Replicate()])
    np.testing.assert_array_equal(np.asarray(summed), np.full((8, 8), 36.0))
    half = dist.reshard(both, mesh, [dist.Replicate(), dist.Partial()])  # sum over dp only
    np.testing.assert_array_equal(np.asarray(half.contributions)[:, 0, 0], [6.0, 8.0, 10.0, 12.0])
    scattered = dist.reshard(both, mesh, [dist.Shard(0), dist.Shard(1)])  # reduce-scatter
    assert scattered.placements == [dist.Shard(0), dist.Shard(1)]
    np.testing.assert_array_equal(np.asarray(scattered), np.full((8, 8), 36.0))
    biggest = dist.PartialArray(jax.device_put(parts, sharding), mesh,
                                [dist.Partial(dist.ReduceType.kRedMax), dist.Partial(dist.ReduceType.kRedMax)])
    np.testing.assert_array_equal(biggest.numpy(), np.full((8, 8), 8.0))

    # to another mesh (pipeline stage 1's sub-mesh) and inside a compiled function
    stage = mesh.get_mesh_with_dim("dp", 1)
    assert stage.process_ids == [4, 5, 6, 7] and stage.dim_names == ["mp"]
    moved = dist.reshard(dist.shard_tensor(x, mesh, [dist.Partial(), dist.Shard(0)]), stage, [dist.Shard(1)])
    assert moved.placements == [dist.Shard(1)] and {d.id for d in moved.devices()} == {4, 5, 6, 7}
    np.testing.assert_allclose(np.asarray(moved), x, rtol=1e-6)

    @jax.jit
    def reduce_inside(p):
        return dist.reshard(p, mesh, [dist.Replicate(), dist.Shard(1)]) * 2

    np.testing.assert_array_equal(np.asarray(reduce_inside(both)), np.full((8, 8), 72.0))


def test_mesh_local_map_dataloader_and_errors():
    mesh = dist.ProcessMesh([[0, 1, 2, 3], [4, 5, 6, 7]], dim_names=["dp", "mp"])
    assert mesh.shape == [2, 4] and mesh.ndim == 2 and mesh.process_ids == list(range(8))
    assert mesh[1].process_ids == [4, 5, 6, 7] and mesh[1].dim_names == ["mp"]
    assert mesh[:, 1].process_ids == [1, 5] and mesh[:, 1].dim_names == ["dp"]
    assert mesh.get_mesh_with_dim("mp").shape == [4, 2]
    assert mesh.get_mesh_with_dim("mp", 1).process_ids == [1, 5]
    assert dist.ProcessMesh(shape=[2, 4], process_ids=range(8), dim_names=["dp", "mp"]) == mesh
    assert dict(mesh.jax_mesh.shape) == {"dp": 2, "mp": 4}
    assert [repr(p) for p in (dist.Shard(1), dist.Replicate(), dist.Partial(), dist.Partial(dist.ReduceType.kRedMax))] == [
        "Shard(dim=1)", "Replicate()", "Partial(reduce_type=SUM)", "Partial(reduce_type=MAX)"]
    assert dist.Shard(0) != dist.Shard(1) and dist.Partial() != dist.Partial(dist.ReduceType.kRedAvg)

    # local_map: per-device sums come back Partial; their reduction is the total
    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    t = dist.shard_tensor(x, mesh, [dist.Shard(0), dist.Shard(1)])
    local_sum = dist.local_map(lambda a: a.sum(keepdims=True).reshape([1]),
                               out_placements=[[dist.Partial(), dist.Partial()]])
    part = local_sum(t)
    assert isinstance(part, dist.PartialArray) and part.contributions.shape == (2, 4, 1)
    assert float(part.numpy()[0]) == x.sum()
    doubled = dist.local_map(lambda a: a * 2, [[dist.Shard(0), dist.Shard(1)]], in_placements=[[dist.Shard(0), dist.Shard(1)]])(t)
    np.testing.assert_array_equal(np.asarray(doubled), 2 * x)
    with pytest.raises(ValueError, match=r"in_placements\[0\]"):
        dist.local_map(lambda a: a, [[dist.Replicate(), dist.Replicate()]],
                       in_placements=[[dist.Replicate(), dist.Replicate()]])(t)

    # dict batches, one mesh per input (the first and the last pipeline stage)
    first, last = mesh.get_mesh_with_dim("dp", 0), mesh.get_mesh_with_dim("dp", 1)
    loader = dist.shard_dataloader([{"x": np.ones((8, 2), np.float32), "y": np.zeros((8,), np.int32)}],
                                   meshes=[first, last], input_keys=["x", "y"], shard_dims="mp")
    batch = next(iter(loader))
    assert batch["x"].process_mesh == first and batch["y"].process_mesh == last
    assert batch["x"].placements == [dist.Shard(0)]

    # bad input names the numbers
    with pytest.raises(ValueError, match=r"16 processes.*only 8 devices"):
        dist.ProcessMesh(np.arange(16).reshape(4, 4).tolist(), dim_names=["dp", "mp"])
    with pytest.raises(ValueError, match=r"\[3\] appear more than once"):
        dist.ProcessMesh([0, 3, 3, 1])
    with pytest.raises(ValueError, match=r"dim_names \['dp'\] has 1 names but the mesh has 2 dimensions"):
        dist.ProcessMesh([[0, 1], [2, 3]], dim_names=["dp"])
    with pytest.raises(ValueError, match=r"4 processes \(shape \[2, 2\]\) but there are 8 devices"):
        dist.set_mesh(dist.ProcessMesh([[0, 1], [2, 3]]))
    with pytest.raises(ValueError, match=r"Shard\(dim=2\) but the tensor has 2 dimensions \(shape \[8, 8\]\)"):
        dist.shard_tensor(x, mesh, [dist.Shard(2), dist.Replicate()])
    with pytest.raises(ValueError, match=r"3 entries .* mesh has 2 dimensions \['dp', 'mp'\]"):
        dist.shard_tensor(x, mesh, [dist.Shard(0), dist.Replicate(), dist.Replicate()])
    with pytest.raises(ValueError, match=r"dimension 0 of size 6 .* 4 devices"):
        dist.shard_tensor(np.ones((6, 8)), mesh, [dist.Replicate(), dist.Shard(0)])
    with pytest.raises(ValueError, match="'pp' is not a dimension"):
        dist.ShardingStage1("pp", mesh).axis(mesh)
    with pytest.raises(ValueError, match="no layer matches"):
        dist.parallelize(nn.Linear(4, 4), None, mesh, {"mp_config": {"parallelize_plan": {"nothing": dist.ColWiseParallel()}}})
    with pytest.raises(NotImplementedError, match="LayerStack"):
        dist.parallelize(LlamaForCausalLM(), None, dist.ProcessMesh(np.arange(8).reshape(2, 2, 2).tolist(), ["dp", "mp", "pp"]),
                         {"pp_config": {"split_spec": "llama.layers"}})
