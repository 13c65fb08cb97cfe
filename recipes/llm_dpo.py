"""Preference tuning of a chat model: DPO (reference log-probs computed once or on the fly) or SimPO (reference-free).

    python recipes/llm_dpo.py --out runs/dpo                    # tiny model, synthetic pairs, ~1 min
    python recipes/llm_dpo.py --loss simpo --base runs/sft/hf   # your SFT model (a Hugging Face directory)
    python recipes/llm_dpo.py --ref online --lora_r 4           # reference recomputed each step; LoRA policy

Pairs come from the reversal task (recipes/_llm_tasks.py): the chosen answer
is the reversed string, the rejected one a near miss (two letters swapped,
or the string not reversed). Without `--base`, a base model and a short SFT
run (`recipes/llm_finetune.py`) make the starting policy. DPO's loss is
-log sigmoid(beta * ((log pi(c) - log ref(c)) - (log pi(r) - log ref(r))))
over answer tokens; SimPO's is -log sigmoid(beta * (mean log pi(c) - mean
log pi(r)) - gamma), no reference model. Prints the held-out margin
log pi(chosen) - log pi(rejected) before and after, and exact-match.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _llm_tasks as tasks  # noqa: E402
from _config_cli import flags  # noqa: E402


@dataclasses.dataclass
class DPOConfig:
    loss: str = dataclasses.field(default="dpo", metadata={"help": "dpo or simpo"})
    ref: str = dataclasses.field(default="once", metadata={"help": "dpo reference log-probs: once (precomputed) or online"})
    base: str = dataclasses.field(default="", metadata={"help": "the SFT model (Hugging Face directory); empty = make one"})
    sft_steps: int = dataclasses.field(default=120, metadata={"help": "SFT steps when making the starting policy"})
    steps: int = dataclasses.field(default=150, metadata={"help": "preference-tuning steps"})
    batch_size: int = dataclasses.field(default=32, metadata={"help": "pairs per step"})
    seq_len: int = dataclasses.field(default=48, metadata={"help": "tokens per sequence"})
    learning_rate: float = dataclasses.field(default=1e-3, metadata={"help": "AdamW learning rate"})
    beta: float = dataclasses.field(default=0.1, metadata={"help": "DPO / SimPO beta"})
    gamma: float = dataclasses.field(default=0.5, metadata={"help": "SimPO target margin"})
    lora_r: int = dataclasses.field(default=0, metadata={"help": "> 0: train LoRA adapters of this rank only"})
    n_train: int = dataclasses.field(default=2000, metadata={"help": "training pairs"})
    n_eval: int = dataclasses.field(default=256, metadata={"help": "held-out pairs"})
    out: str = dataclasses.field(default="runs/llm_dpo", metadata={"help": "output directory"})
    seed: int = dataclasses.field(default=0, metadata={"help": "seed"})
    log_file: str = dataclasses.field(default="", metadata={"help": "also append JSON lines here"})


def parse_config(argv=None) -> DPOConfig:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for field in dataclasses.fields(DPOConfig):
        parser.add_argument(*flags(field.name), dest=field.name, type=type(field.default), default=field.default,
                            help=f"{field.metadata['help']} (default {field.default!r})")
    config = DPOConfig(**vars(parser.parse_args(argv)))
    if config.loss not in ("dpo", "simpo"):
        parser.error(f"--loss must be dpo or simpo; got {config.loss!r}")
    if config.ref not in ("once", "online"):
        parser.error(f"--ref must be once or online; got {config.ref!r}")
    return config


def near_miss(s: str, rng) -> str:
    """A wrong answer close to the right one."""
    right = list(s[::-1])
    if rng.random() < 0.5:
        i = int(rng.integers(0, len(right) - 1))
        right[i], right[i + 1] = right[i + 1], right[i]
        if right == list(s[::-1]):
            return s if s != s[::-1] else s[1:] + s[0]
        return "".join(right)
    return s if s != s[::-1] else s[1:] + s[0]


def pair_arrays(tok, strings: list[str], seq_len: int, seed: int):
    rng = np.random.default_rng(seed)
    rejected = [near_miss(s, rng) for s in strings]
    chosen_ids, chosen_labels = tasks.sft_arrays(tok, strings, seq_len)
    rejected_ids, rejected_labels = tasks.sft_arrays(tok, strings, seq_len, answers=rejected)
    return {"chosen_ids": chosen_ids, "chosen_labels": chosen_labels,
            "rejected_ids": rejected_ids, "rejected_labels": rejected_labels}


def sequence_logps(lm, ids, labels):
    """(sum, count) of log p(label) over the answer tokens of each row."""
    import jax
    import jax.numpy as jnp

    logp = jax.nn.log_softmax(lm(ids).astype(jnp.float32), axis=-1)
    keep = labels != -100
    picked = jnp.take_along_axis(logp, jnp.where(keep, labels, 0)[..., None], axis=-1)[..., 0]
    return jnp.where(keep, picked, 0.0).sum(-1), keep.sum(-1)


def main(argv=None) -> int:
    config = parse_config(argv)
    import jax
    import jax.numpy as jnp

    import pdx
    from pdx.models.llama import save_hf_pretrained
    from pdx.peft import LoRAConfig, LoRAModel

    emit = lambda record: tasks.emit(record, config.log_file)  # noqa: E731
    tok = tasks.tokenizer()
    base = config.base
    if not base:
        import llm_finetune

        sft_out = os.path.join(config.out, "sft")
        base = os.path.join(sft_out, "hf")
        if not os.path.isfile(os.path.join(base, "config.json")):
            llm_finetune.main(["--mode", "full", "--steps", str(config.sft_steps), "--out", sft_out,
                               "--seed", str(config.seed), "--log_file", config.log_file])
    policy = tasks.load_base(base)
    reference = tasks.load_base(base)
    train, held_out = tasks.strings(config.seed + 1, config.n_train, config.n_eval)
    data = pair_arrays(tok, train, config.seq_len, config.seed)
    evals = pair_arrays(tok, held_out, config.seq_len, config.seed + 1)

    network = policy
    if config.lora_r > 0:
        network = LoRAModel(policy, LoRAConfig(target_modules=[".*_proj"], r=config.lora_r,
                                               lora_alpha=2.0 * config.lora_r))
    lm_of = lambda net: net.model if isinstance(net, LoRAModel) else net  # noqa: E731

    logps = pdx.jit(lambda m, ids, labels: sequence_logps(m, ids, labels)[0])

    def ref_logps(ids, labels):
        return np.asarray(logps(reference, ids, labels))

    if config.loss == "dpo" and config.ref == "once":
        data["chosen_ref"] = np.concatenate([ref_logps(data["chosen_ids"][i:i + 256], data["chosen_labels"][i:i + 256])
                                             for i in range(0, config.n_train, 256)])
        data["rejected_ref"] = np.concatenate([ref_logps(data["rejected_ids"][i:i + 256],
                                                         data["rejected_labels"][i:i + 256])
                                               for i in range(0, config.n_train, 256)])

    def margin(lm) -> float:
        lm.eval()
        c = logps(lm, evals["chosen_ids"], evals["chosen_labels"])
        r = logps(lm, evals["rejected_ids"], evals["rejected_labels"])
        lm.train()
        return float(jnp.mean(c - r))

    before = {"margin": margin(lm_of(network)), "exact_match": tasks.exact_match(lm_of(network), tok, held_out)}
    emit({"event": "start", "loss": config.loss, "ref": config.ref, **{f"{k}_before": v for k, v in before.items()}})

    def preference_loss(net, ref, batch):
        lm = lm_of(net)
        c, nc = sequence_logps(lm, batch["chosen_ids"], batch["chosen_labels"])
        r, nr = sequence_logps(lm, batch["rejected_ids"], batch["rejected_labels"])
        if config.loss == "simpo":
            logits = config.beta * (c / jnp.maximum(nc, 1) - r / jnp.maximum(nr, 1)) - config.gamma
        else:
            if config.ref == "once":
                c_ref, r_ref = batch["chosen_ref"], batch["rejected_ref"]
            else:
                c_ref = jax.lax.stop_gradient(sequence_logps(ref, batch["chosen_ids"], batch["chosen_labels"])[0])
                r_ref = jax.lax.stop_gradient(sequence_logps(ref, batch["rejected_ids"], batch["rejected_labels"])[0])
            logits = config.beta * ((c - c_ref) - (r - r_ref))
        return -jax.nn.log_sigmoid(logits).mean()

    opt = pdx.optimizer.AdamW(learning_rate=config.learning_rate, parameters=network, weight_decay=0.0)
    reference.eval()

    @pdx.jit
    def step(net, opt, ref, batch):
        loss, grads = pdx.value_and_grad(lambda n: preference_loss(n, ref, batch))(net)
        opt.step(grads)
        return loss

    for i in range(config.steps):
        rows = tasks.batch_at(config.n_train, i, config.batch_size, config.seed)
        batch = {k: jnp.asarray(v[rows]) for k, v in data.items()}
        loss = step(network, opt, reference, batch)
        if (i + 1) % 25 == 0 or i + 1 == config.steps:
            emit({"step": i + 1, "loss": round(float(loss), 6)})

    lm = lm_of(network)
    after = {"margin": margin(lm), "exact_match": tasks.exact_match(lm, tok, held_out)}
    if isinstance(network, LoRAModel):
        network.save_pretrained(os.path.join(config.out, "adapter"))
        lm = network.merge()
    save_hf_pretrained(lm, os.path.join(config.out, "hf"), tokenizer=tok)
    emit({"event": "done", "loss": config.loss, **{f"{k}_before": v for k, v in before.items()},
          **{f"{k}_after": v for k, v in after.items()}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
