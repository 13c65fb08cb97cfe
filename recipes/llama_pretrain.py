"""Pretrain a LLaMA-style model: any HybridConfig layout, one process or many, resumable.

Runs out of the box on a CPU with the tiny preset on a corpus that ships with
Python (the `pydoc_data` help topics, ~460 KB of English), byte-level tokens:

    python recipes/llama_pretrain.py --preset tiny --steps 200
    pdx launch --nproc_per_node 2 --devices_per_proc 4 recipes/llama_pretrain.py --preset tiny --dp 2 --mp 4
    python recipes/llama_pretrain.py --preset 1b --data corpus.jsonl --seq_len 2048 --batch_size 8 --dtype bfloat16

Training runs on one `pdx.TrainState` (parameters, AdamW state, step, ...):
its leaves are placed on the HybridConfig's mesh once (`pdx.train.state_shardings`
from the parameters' logical axis names), and the step is a pure
`pdx.train.make_step` compiled with those shardings in and out, the state
donated. Each batch of (B, seq_len + 1) token windows is split on the host into inputs and
labels and placed as ("batch", "seq"): with `--sep` the sequence is split too, the model keeps
its activations split between blocks and attends with `pdx.parallel.context_attention`
(`--context_parallel ring|allgather`). The learning rate is the scheduler's pure schedule of the state's
step count, evaluated inside the step.

Logs loss, tokens/s and MFU every `log_every` steps (JSON lines to `log_file`
too), evaluates perplexity on a held-out slice, checkpoints the TrainState
every `save_every` steps with pdx.checkpoint (the data position is the step,
so a resumed run sees exactly the batches the straight run would have), and
resumes from the latest committed checkpoint in `ckpt_dir` by restoring the
TrainState straight onto this run's mesh — which may differ from the mesh
that saved it (save under dp=2, resume under mp=2 or ZeRO/FSDP).

FLOP convention for MFU (PaLM, appendix B): per token 6 * N + 12 * L * d * S,
N = parameters excluding the embedding, L layers, d width, S sequence length;
peak FLOP/s from `--peak_tflops` or the device's dense bf16 peak (H100/H200:
989 TFLOP/s); none on CPU, where MFU is not reported.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time

import numpy as np


@dataclasses.dataclass(frozen=True)
class PretrainConfig:
    """Every knob of the recipe; presets override some of them."""

    preset: str = dataclasses.field(default="tiny", metadata={"help": "model preset: tiny, 125m, 1b, 7b"})
    data: str = dataclasses.field(default="", metadata={"help": "a .txt or .jsonl ('text' field) file; empty = Python's pydoc_data topics"})
    seq_len: int = dataclasses.field(default=64, metadata={"help": "tokens per training sequence"})
    batch_size: int = dataclasses.field(default=16, metadata={"help": "sequences per step (global, all processes)"})
    steps: int = dataclasses.field(default=200, metadata={"help": "total optimizer steps (a resumed run continues to this)"})
    stop_after: int = dataclasses.field(default=0, metadata={"help": "end this run after this step, checkpointed (0 = run to steps); the schedule still follows steps"})
    learning_rate: float = dataclasses.field(default=3e-3, metadata={"help": "peak AdamW learning rate"})
    warmup_steps: int = dataclasses.field(default=20, metadata={"help": "linear warmup steps before cosine decay"})
    weight_decay: float = dataclasses.field(default=0.1, metadata={"help": "AdamW weight decay"})
    grad_clip: float = dataclasses.field(default=1.0, metadata={"help": "global-norm gradient clip (0 = off)"})
    ce_chunk: int = dataclasses.field(default=8192, metadata={"help": "vocabulary chunk of the fused head + cross-entropy (0 = build full logits)"})
    dtype: str = dataclasses.field(default="float32", metadata={"help": "parameter dtype: float32 or bfloat16"})
    seed: int = dataclasses.field(default=0, metadata={"help": "seed for parameters and batch order"})
    layers: int = dataclasses.field(default=0, metadata={"help": "override the preset's layer count (0 = keep)"})
    scan_layers: bool = dataclasses.field(default=False, metadata={"help": "one lax.scan over the layers"})
    recompute: str = dataclasses.field(default="", metadata={"help": "recompute policy: '', full, dots, dots_with_no_batch_dims"})
    dp: int = dataclasses.field(default=-1, metadata={"help": "data-parallel degree (-1: the devices left over)"})
    sharding: int = dataclasses.field(default=1, metadata={"help": "ZeRO sharding degree"})
    sharding_stage: int = dataclasses.field(default=1, metadata={"help": "ZeRO stage 1, 2 or 3"})
    mp: int = dataclasses.field(default=1, metadata={"help": "tensor-parallel degree"})
    pp: int = dataclasses.field(default=1, metadata={"help": "pipeline stages"})
    sep: int = dataclasses.field(default=1, metadata={"help": "sequence (context) parallel degree"})
    context_parallel: str = dataclasses.field(default="ring", metadata={"help": "attention with --sep > 1: ring or allgather"})
    sequence_parallel: bool = dataclasses.field(default=False, metadata={"help": "Megatron sequence parallel: activations between blocks split over mp too"})
    accumulate_steps: int = dataclasses.field(default=1, metadata={"help": "pipeline microbatches"})
    virtual_pp: int = dataclasses.field(default=1, metadata={"help": "virtual pipeline stages (interleaved schedule)"})
    log_every: int = dataclasses.field(default=10, metadata={"help": "steps between log lines"})
    eval_every: int = dataclasses.field(default=100, metadata={"help": "steps between perplexity evaluations (0 = end only)"})
    eval_batches: int = dataclasses.field(default=4, metadata={"help": "held-out batches per evaluation"})
    save_every: int = dataclasses.field(default=100, metadata={"help": "steps between checkpoints (0 = never)"})
    ckpt_dir: str = dataclasses.field(default="", metadata={"help": "checkpoint directory; resumes from its latest step"})
    log_file: str = dataclasses.field(default="", metadata={"help": "JSON-lines metrics file"})
    peak_tflops: float = dataclasses.field(default=0.0, metadata={"help": "device peak for MFU (0 = by device kind)"})


PRESETS = {
    "tiny": dict(seq_len=64, batch_size=16, learning_rate=3e-3),
    "125m": dict(seq_len=1024, batch_size=32, learning_rate=6e-4),
    "1b": dict(seq_len=2048, batch_size=8, learning_rate=3e-4, dtype="bfloat16", scan_layers=True),
    "7b": dict(seq_len=4096, batch_size=4, learning_rate=3e-4, dtype="bfloat16", scan_layers=True, recompute="dots"),
}
_PEAK_TFLOPS = {"H100": 989.0, "H200": 989.0, "A100": 312.0}


def _as_bool(text: str) -> bool:
    if text.lower() not in ("1", "0", "true", "false", "yes", "no"):
        raise argparse.ArgumentTypeError(f"expected true/false; got {text!r}")
    return text.lower() in ("1", "true", "yes")


def parse_config(argv=None) -> PretrainConfig:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _config_cli import flags

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for field in dataclasses.fields(PretrainConfig):
        kind = _as_bool if isinstance(field.default, bool) else type(field.default)
        parser.add_argument(*flags(field.name), dest=field.name, type=kind, default=None,
                            help=f"{field.metadata['help']} (default {field.default!r})")
    args = {k: v for k, v in vars(parser.parse_args(argv)).items() if v is not None}
    preset = args.get("preset", PretrainConfig.preset)
    if preset not in PRESETS:
        parser.error(f"--preset must be one of {sorted(PRESETS)}; got {preset!r}")
    return PretrainConfig(**{**PRESETS[preset], **args})


def load_tokens(path: str) -> np.ndarray:
    """Byte-level tokens (ids 0..255) of a text/jsonl file or of pydoc_data's topics."""
    if not path:
        import pydoc_data.topics

        text = "\n\n".join(pydoc_data.topics.topics[k] for k in sorted(pydoc_data.topics.topics))
    elif path.endswith(".jsonl"):
        with open(path, encoding="utf-8") as f:
            text = "\n\n".join(json.loads(line)["text"] for line in f if line.strip())
    else:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8).astype(np.int32)


def batch_at(tokens: np.ndarray, step: int, batch: int, seq_len: int, seed: int) -> np.ndarray:
    """The step's (batch, seq_len + 1) windows: a pure function of (seed, step), so resume is exact."""
    rng = np.random.default_rng([seed, step])
    starts = rng.integers(0, len(tokens) - seq_len - 1, batch)
    return np.stack([tokens[s:s + seq_len + 1] for s in starts])


def flops_per_token(cfg, seq_len: int) -> float:
    embed = cfg.vocab_size * cfg.hidden_size
    return 6 * (cfg.num_params() - embed) + 12 * cfg.num_hidden_layers * cfg.hidden_size * seq_len


def main(argv=None) -> int:
    config = parse_config(argv)
    import pdx

    rank, world = pdx.parallel.init()
    import jax

    from pdx.models.llama import LlamaConfig, LlamaForCausalLM

    overrides = dict(scan_layers=config.scan_layers, recompute=config.recompute or None)
    if config.layers:
        overrides["num_hidden_layers"] = config.layers
    model_cfg = LlamaConfig.from_preset(config.preset, **overrides)
    if model_cfg.vocab_size < 256:
        raise SystemExit(f"preset {config.preset!r} has vocab_size {model_cfg.vocab_size} < 256 byte tokens")
    hybrid = pdx.parallel.HybridConfig(dp_degree=config.dp, sharding_degree=config.sharding,
                                       sharding_stage=config.sharding_stage, mp_degree=config.mp,
                                       pp_degree=config.pp, sep_degree=config.sep, context_parallel=config.context_parallel,
                                       sequence_parallel=config.sequence_parallel,
                                       accumulate_steps=config.accumulate_steps, virtual_pp_degree=config.virtual_pp)
    mesh = hybrid.mesh()

    pdx.seed(config.seed)
    model = LlamaForCausalLM(model_cfg)
    if config.dtype != "float32":
        model.to(dtype=config.dtype)
    schedule = pdx.optimizer.lr.LinearWarmup(
        pdx.optimizer.lr.CosineAnnealingDecay(config.learning_rate, T_max=max(1, config.steps - config.warmup_steps)),
        warmup_steps=config.warmup_steps, start_lr=0.0, end_lr=config.learning_rate)
    clip = pdx.nn.ClipGradByGlobalNorm(config.grad_clip) if config.grad_clip > 0 else None
    opt = pdx.optimizer.AdamW(learning_rate=schedule, parameters=model, weight_decay=config.weight_decay,
                              grad_clip=clip, multi_precision=config.dtype != "float32")
    lr_at = schedule.as_schedule()  # optimizer updates -> learning rate, a pure function

    # All training state as one pytree, placed on the mesh by the parameters' logical names.
    state = pdx.TrainState.create(model, opt, seed=config.seed)
    shardings = pdx.train.state_shardings(state, hybrid, mesh)
    state = pdx.train.place_state(state, shardings)
    del model, opt  # from here on the state is the model

    chunk = config.ce_chunk or None

    def lm_loss(model, batch):
        inputs, labels = batch
        return model.loss(inputs, labels, chunk_size=chunk)

    update = pdx.train.make_step(lm_loss)

    def step_fn(state, batch):
        return update(state.replace(lr=lr_at(state.step)), batch)

    tokens = load_tokens(config.data)
    split = int(len(tokens) * 0.95)
    train_tokens, val_tokens = tokens[:split], tokens[split:]
    # A (B, seq_len + 1) window becomes inputs and labels, (B, seq_len) each, split on the host so both
    # are placed as ("batch", "seq"): rows over dp/sharding, the sequence over sep (seq_len + 1 would not divide).
    token_sharding = pdx.parallel.named_sharding(("batch", "seq"), (config.batch_size, config.seq_len), hybrid, mesh)
    batch_sharding = (token_sharding, token_sharding)
    replicated = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())
    train_step = pdx.train.jit_step(step_fn, shardings, batch=batch_sharding, metrics=replicated)
    eval_loss = jax.jit(lambda state, batch: lm_loss(state.merge(training=False), batch),
                        in_shardings=(shardings, batch_sharding), out_shardings=replicated)

    def place(window):
        return tuple(jax.make_array_from_callback(host.shape, token_sharding, lambda idx, host=host: host[idx])
                     for host in (np.ascontiguousarray(window[:, :-1]), np.ascontiguousarray(window[:, 1:])))

    start = 0
    manager = None
    if config.ckpt_dir:
        manager = pdx.checkpoint.CheckpointManager(config.ckpt_dir, max_to_keep=2)
        if manager.latest_step() is not None:
            # straight onto this run's mesh, whatever mesh saved it
            ckpt = manager.restore(target=state, shardings=shardings)
            state = ckpt.state
            start = ckpt.data_state["next_step"]
            _emit(config, rank, {"event": "resumed", "step": start})

    peak = config.peak_tflops or next((v for k, v in _PEAK_TFLOPS.items() if k in jax.devices()[0].device_kind), 0.0)
    per_token = flops_per_token(model_cfg, config.seq_len)
    if config.pp > 1:
        _emit(config, rank, {"event": "pipeline", "stages": config.pp, "microbatches": config.accumulate_steps,
                             "virtual": config.virtual_pp,
                             "bubble": round(pdx.parallel.bubble_fraction(config.pp, config.accumulate_steps,
                                                                          config.virtual_pp), 4)})
    window_start, window_tokens = time.perf_counter(), 0
    with pdx.parallel.use_mesh(hybrid, mesh):
        end = min(config.steps, config.stop_after or config.steps)
        for step in range(start, end):
            state, metrics = train_step(state, place(batch_at(train_tokens, step, config.batch_size, config.seq_len,
                                                               config.seed)))
            loss = metrics["loss"]
            window_tokens += config.batch_size * config.seq_len
            done = step + 1
            if done % config.log_every == 0 or done == config.steps:
                loss = float(loss)
                elapsed = time.perf_counter() - window_start
                tps = window_tokens / elapsed
                record = {"step": done, "loss": round(loss, 6), "tokens_per_s": round(tps, 1),
                          "lr": float(lr_at(done))}
                if peak:
                    record["mfu"] = round(tps * per_token / (peak * 1e12 * jax.device_count()), 4)
                _emit(config, rank, record)
                window_start, window_tokens = time.perf_counter(), 0
            if (config.eval_every and done % config.eval_every == 0) or done == config.steps:
                losses = [float(eval_loss(state, place(batch_at(val_tokens, i, config.batch_size, config.seq_len,
                                                                 config.seed + 1))))
                          for i in range(config.eval_batches)]
                _emit(config, rank, {"step": done, "eval_loss": round(float(np.mean(losses)), 6),
                                     "perplexity": round(float(np.exp(np.mean(losses))), 4)})
            if manager is not None and ((config.save_every and done % config.save_every == 0) or done == end):
                manager.save(done, state, data_state={"next_step": done}, metadata={"loss": float(loss)}, force=True)
                if manager.reached_preemption(done):
                    manager.wait_until_finished()
                    _emit(config, rank, {"event": "preempted", "step": done})
                    return 0
    if manager is not None:
        manager.close()
    return 0


def _emit(config: PretrainConfig, rank: int, record: dict) -> None:
    if rank != 0:
        return
    print(json.dumps(record), flush=True)
    if config.log_file:
        with open(config.log_file, "a") as f:
            f.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    sys.exit(main())
