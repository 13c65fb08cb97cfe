"""Paddle's fleet hybrid-parallel programs train exactly like one device.

Two programs written the way Paddle's fleet tutorials write them
(`from paddle.distributed import fleet`, `DistributedStrategy.hybrid_configs`,
meta_parallel layers, `distributed_model` / `distributed_optimizer`): a
tensor-parallel model trained with a compiled step on dp x sharding x mp,
and a PipelineLayer with a shared (tied) embedding trained with
`train_batch` on dp x mp x pp. Losses and parameters after three steps on
the 8 host devices must equal the same model trained on one device within
1e-5.
"""

import jax
import numpy as np
import pytest

import pdx as paddle
import pdx.distributed as dist
import pdx.nn.functional as F
from pdx import nn
from pdx.distributed import fleet
from pdx.distributed.fleet.meta_parallel import (
    ColumnParallelLinear,
    LayerDesc,
    ParallelCrossEntropy,
    PipelineLayer,
    RowParallelLinear,
    SharedLayerDesc,
    VocabParallelEmbedding,
)

VOCAB, HIDDEN, FFN, LAYERS, BATCH, SEQ, STEPS = 32, 16, 32, 4, 8, 8, 3


# -- the programs' layers (Paddle's tutorial style) -------------------------------------------------
class ParallelMLP(nn.Layer):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(HIDDEN)
        self.up = ColumnParallelLinear(HIDDEN, FFN, gather_output=False, has_bias=True)
        self.down = RowParallelLinear(FFN, HIDDEN, input_is_parallel=True, has_bias=True)

    def forward(self, x):
        return x + self.down(F.gelu(self.up(self.norm(x))))


class TPModel(nn.Layer):
    def __init__(self):
        super().__init__()
        self.embed = VocabParallelEmbedding(VOCAB, HIDDEN)
        self.blocks = nn.LayerList([ParallelMLP() for _ in range(2)])
        self.head = ColumnParallelLinear(HIDDEN, VOCAB, gather_output=False, has_bias=False)

    def forward(self, ids):
        x = self.embed(ids)
        for block in self.blocks:
            x = block(x)
        return self.head(x)


class EmbeddingPipe(nn.Layer):
    def __init__(self):
        super().__init__()
        self.word_embeddings = VocabParallelEmbedding(VOCAB, HIDDEN)

    def forward(self, ids):
        return self.word_embeddings(ids)

    @property
    def embedding_weight(self):
        return self.word_embeddings.weight


def logits_helper(embedding, x):  # the tied output projection: x @ E^T
    return paddle.matmul(x, embedding.embedding_weight, transpose_y=True)


class Criterion(nn.Layer):
    def __init__(self):
        super().__init__()
        self.loss = ParallelCrossEntropy()

    def forward(self, logits, labels):
        return self.loss(logits, labels).mean()


def pipeline_model():
    paddle.seed(11)
    descs = [SharedLayerDesc("embed", EmbeddingPipe, shared_weight_attr="embedding_weight")]
    descs += [LayerDesc(ParallelMLP) for _ in range(LAYERS)]
    descs += [LayerDesc(nn.LayerNorm, HIDDEN),
              SharedLayerDesc("embed", EmbeddingPipe, forward_func=logits_helper, shared_weight_attr="embedding_weight")]
    return PipelineLayer(layers=descs, loss_fn=Criterion())


def data():
    rng = np.random.default_rng(3)
    tokens = rng.integers(0, VOCAB, (STEPS, BATCH, SEQ + 1)).astype(np.int32)
    return [(t[:, :-1], t[:, 1:]) for t in tokens]


def momentum(model):
    return paddle.optimizer.Momentum(learning_rate=0.2, momentum=0.9, parameters=model.parameters())


@paddle.jit
def train_step(model, opt, ids, labels):
    def loss_fn(m):
        return F.cross_entropy(m(ids).reshape([-1, VOCAB]), labels.reshape([-1]))

    loss, grads = paddle.value_and_grad(loss_fn)(model)
    opt.step(grads)
    return loss


@paddle.jit
def pipeline_reference_step(model, opt, ids, labels):
    loss, grads = paddle.value_and_grad(lambda m: m._loss_fn(m(ids), labels))(model)
    opt.step(grads)
    return loss


def params(model):
    return {k: np.asarray(v) for k, v in model.state_dict().items()}


def assert_same(got, want):
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)
    assert sorted(got[1]) == sorted(want[1])
    for name in want[1]:
        np.testing.assert_allclose(got[1][name], want[1][name], rtol=1e-5, atol=1e-5, err_msg=name)


@pytest.fixture(scope="module")
def reference():
    """One device, no fleet: both programs' losses and parameters after STEPS steps."""
    paddle.seed(5)
    tp = TPModel()
    opt = momentum(tp)
    tp_losses = [float(train_step(tp, opt, x, y)) for x, y in data()]
    pipe = pipeline_model()
    opt = momentum(pipe)
    pipe_losses = [float(pipeline_reference_step(pipe, opt, x, y)) for x, y in data()]
    return {"tp": (tp_losses, params(tp)), "pipe": (pipe_losses, params(pipe))}


@pytest.fixture
def fleet_job():
    yield
    dist.destroy_process_group()  # fleet.init's mesh stops being the active one


def test_tensor_parallel_program_matches_one_device(reference, fleet_job):
    strategy = fleet.DistributedStrategy()
    strategy.hybrid_configs = {"dp_degree": 2, "mp_degree": 2, "pp_degree": 1, "sharding_degree": 2}
    fleet.init(is_collective=True, strategy=strategy)
    hcg = fleet.get_hybrid_communicate_group()
    assert (hcg.get_data_parallel_world_size(), hcg.get_model_parallel_world_size(),
            hcg.get_sharding_parallel_world_size(), hcg.get_pipe_parallel_world_size()) == (2, 2, 2, 1)
    assert hcg.get_model_parallel_group().nranks == 2 and hcg.get_model_parallel_group().axis_name == "mp"

    paddle.seed(5)
    model = TPModel()
    opt = momentum(model)
    model = fleet.distributed_model(model)
    opt = fleet.distributed_optimizer(opt)
    losses = [float(train_step(model, opt, x, y)) for x, y in data()]
    assert_same((losses, params(model)), reference["tp"])

    # the column-parallel weight is split over "mp" by columns, the row-parallel one by rows
    up = model._layers.blocks[0].up.weight.get_value()
    down = model._layers.blocks[0].down.weight.get_value()
    assert up.sharding.spec == jax.sharding.PartitionSpec(None, "mp")
    assert down.sharding.spec == jax.sharding.PartitionSpec("mp")
    assert dist.get_placements(up)[-1] == dist.Shard(1)  # "mp" is the innermost mesh dim
    # ZeRO-1 over "sharding": the momentum of the [HIDDEN, FFN] weight is split there too
    velocity = [s for s in jax.tree.leaves(opt.opt_state) if s.shape == (HIDDEN, FFN)]
    assert velocity and all("sharding" in str(v.sharding.spec) for v in velocity)
    # the step splits the batch over the data-parallel axes: per-device logits hold BATCH / 4 rows
    hlo = train_step.lower(model, opt, *data()[0]).compile().as_text()
    assert "all-reduce" in hlo or "reduce-scatter" in hlo


@pytest.mark.parametrize("schedule", ["1F1B", "FThenB"])
def test_pipeline_program_matches_one_device(reference, fleet_job, schedule):
    strategy = fleet.DistributedStrategy()
    strategy.hybrid_configs = {"dp_degree": 2, "mp_degree": 2, "pp_degree": 2}
    strategy.pipeline_configs = {"accumulate_steps": 2, "micro_batch_size": BATCH // 2, "schedule_mode": schedule}
    fleet.init(is_collective=True, strategy=strategy)
    hcg = fleet.get_hybrid_communicate_group()
    assert hcg.get_parallel_mode() == fleet.ParallelMode.PIPELINE_PARALLEL
    assert hcg.get_stage_id() == 0 and hcg.topology().get_dim("pipe") == 2

    model = pipeline_model()
    assert model.get_num_stages() == 2 and model.blocks.num_layers == LAYERS
    opt = momentum(model)
    model = fleet.distributed_model(model)
    opt = fleet.distributed_optimizer(opt)
    assert isinstance(model, fleet.meta_parallel.PipelineParallel)
    assert model._one_f_one_b == (schedule == "1F1B")  # Paddle's default schedule runs as 1F1B
    losses = [float(model.train_batch([x, y], opt)) for x, y in data()]
    assert_same((losses, params(model)), reference["pipe"])

    # blocks live on their stage: the stacked layer dimension is split over "pp"
    w = model._layers.blocks.block.up.weight.get_value()
    assert w.shape == (LAYERS, HIDDEN, FFN) and w.sharding.spec[0] == "pp"
    # the tied embedding is one parameter
    assert [k for k in params(model) if "word_embeddings" in k] == ["shared_layers.embed.word_embeddings.weight"]
    x, y = data()[0]
    # the compiled step ran the pipeline: activations go round the "pp" ring
    step = fleet.meta_parallel.PipelineParallel.train_batch.__globals__["_steps"]()["train"]
    kinds = {c.kind for c in paddle.parallel.collectives(step.lower(model, opt, x, y).compile())}
    assert "collective-permute" in kinds, kinds
    assert float(model.eval_batch([x, y], compute_loss=True)) < reference["pipe"][0][0]
    assert model.eval_batch([x, y]).shape == (BATCH, SEQ, VOCAB)


def test_topology_groups_and_collectives_in_local_map(fleet_job):
    strategy = fleet.DistributedStrategy()
    strategy.hybrid_configs = {"dp_degree": 2, "mp_degree": 4}
    fleet.init(is_collective=True, strategy=strategy)
    hcg = fleet.get_hybrid_communicate_group()
    topo = hcg.topology()
    assert topo.world_size() == 8 and topo.get_dim("model") == 4 and topo.get_dim("data") == 2
    assert topo.get_comm_list("model") == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert topo.get_comm_list("data") == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert topo.get_axis_list("data", 1) == [4, 5, 6, 7]
    assert topo.get_coord(6) == (1, 0, 0, 0, 2)
    assert hcg.get_model_parallel_group().ranks == [0, 1, 2, 3]
    assert hcg.get_data_parallel_group().ranks == [0, 4]
    assert (fleet.worker_index(), fleet.worker_num(), fleet.is_first_worker()) == (0, 1, True)

    # inside local_map, an hcg group reduces over its mesh axis only
    mesh = dist.ProcessMesh(np.arange(8).reshape(2, 4).tolist(), dim_names=["dp", "mp"])
    x = np.arange(32, dtype=np.float32).reshape(8, 4)
    t = dist.shard_tensor(x, mesh, [dist.Shard(0), dist.Shard(1)])  # each device: 4 rows x 1 column
    mp_sum = dist.local_map(lambda a: dist.all_reduce(a, group=hcg.get_model_parallel_group()),
                            [[dist.Shard(0), dist.Replicate()]])(t)
    want = x.sum(1, keepdims=True)
    np.testing.assert_allclose(np.asarray(mp_sum), want)


def test_bad_input_names_the_numbers(fleet_job):
    strategy = fleet.DistributedStrategy()
    strategy.hybrid_configs = {"dp_degree": 2, "mp_degree": 3}
    with pytest.raises(ValueError, match=r"2\*1\*3\*1\*1\*1 = 6, but there are 8 devices"):
        fleet.init(is_collective=True, strategy=strategy)
    with pytest.raises(ValueError, match=r"unknown keys \['mp_degre'\]"):
        strategy.hybrid_configs = {"mp_degre": 2}
    with pytest.raises(ValueError, match="mp_degree must be a positive int"):
        strategy.hybrid_configs = {"mp_degree": 0}
        strategy.hybrid_config()
    with pytest.raises(RuntimeError, match=r"call fleet.init"):
        fleet.get_hybrid_communicate_group()
    with pytest.raises(ValueError, match=r"run of identical consecutive layers \(3 found\).*2 x 1"):
        PipelineLayer([LayerDesc(nn.Linear, 4, 4) for _ in range(3)], num_stages=2)
    with pytest.raises(TypeError, match="layer_func must be a pdx.nn.Layer subclass"):
        LayerDesc(lambda: None)
    with pytest.raises(ValueError, match=r"label of shape \(2, 3\) must end in 1"):
        ParallelCrossEntropy()(np.zeros((2, 3), np.float32), np.zeros((2, 3), np.int32))
