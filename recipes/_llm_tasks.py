"""The synthetic instruction task the LLM recipes train on, and what they share.

Task: reverse a string of 5 letters from "abcdefgh" (32768 strings; held-out
strings never appear in training). A base model first learns the task in
plain text ("abcde -> edcba"); supervised fine-tuning teaches it to answer
in the chat format; DPO prefers the right reversal over a near miss.
Tokens are bytes plus the chat template's special tokens (a byte-level BPE
with no merges), so every prompt has the same length.
"""

from __future__ import annotations

import itertools
import json
import sys

import numpy as np

LETTERS, LENGTH = "abcdefgh", 5
CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
SPECIAL = ("<unk>", "<s>", "</s>", "<pad>", "<|im_start|>", "<|im_end|>")


def tokenizer():
    """Bytes + the special tokens (no merges), with the ChatML template."""
    from pdx.text import train_bpe

    return train_bpe(["".join(LETTERS)] * 4, vocab_size=256 + len(SPECIAL), special_tokens=SPECIAL,
                     chat_template=CHATML, min_frequency=1 << 30)


def strings(seed: int, n_train: int, n_eval: int) -> tuple[list[str], list[str]]:
    """Disjoint train / held-out strings."""
    everything = ["".join(p) for p in itertools.product(LETTERS, repeat=LENGTH)]
    order = np.random.default_rng(seed).permutation(len(everything))
    picked = [everything[i] for i in order[: n_train + n_eval]]
    return picked[:n_train], picked[n_train:]


def chat(s: str, answer: str | None = None) -> list[dict]:
    return [{"role": "user", "content": f"reverse {s}"},
            {"role": "assistant", "content": s[::-1] if answer is None else answer}]


def plain_text(s: str) -> str:
    return f"{s} -> {s[::-1]}\n"


def sft_arrays(tok, texts: list[str], seq_len: int, answers: list[str] | None = None):
    """(input_ids, labels) (N, seq_len): labels are the next token on assistant tokens, -100 elsewhere."""
    pad = tok.pad_token_id
    ids = np.full((len(texts), seq_len), pad, np.int32)
    labels = np.full((len(texts), seq_len), -100, np.int32)
    for i, s in enumerate(texts):
        row, mask = tok.encode_chat(chat(s, None if answers is None else answers[i]))
        if len(row) > seq_len + 1:
            raise ValueError(f"an example has {len(row)} tokens; raise --seq_len above {len(row) - 1}")
        ids[i, : len(row) - 1] = row[:-1]
        labels[i, : len(row) - 1] = np.where(mask[1:], row[1:], -100)
    return ids, labels


def prompts(tok, texts: list[str]) -> np.ndarray:
    return np.asarray([tok.apply_chat_template(chat(s)[:1], add_generation_prompt=True) for s in texts], np.int32)


def exact_match(model, tok, texts: list[str], batch: int = 64) -> float:
    """Share of held-out prompts answered exactly (greedy decoding through the KV cache)."""
    end = tok.token_to_id("<|im_end|>")
    hits = 0
    was_training = model.training
    model.eval()
    for i in range(0, len(texts), batch):
        chunk = texts[i:i + batch]
        p = prompts(tok, chunk)
        out = np.asarray(model.generate(p, max_new_tokens=LENGTH + 1, eos_token_id=end))[:, p.shape[1]:]
        for s, row in zip(chunk, out):
            hits += tok.decode(row.tolist()) == s[::-1] + "<|im_end|>"
    if was_training:
        model.train()
    return hits / len(texts)


def emit(record: dict, log_file: str = "") -> None:
    print(json.dumps(record), flush=True)
    if log_file:
        with open(log_file, "a") as f:
            f.write(json.dumps(record) + "\n")


def batch_at(n: int, step: int, batch: int, seed: int) -> np.ndarray:
    """Row indices of a step's batch: a pure function of (seed, step), so a resumed run sees the same batches."""
    return np.random.default_rng([seed, step]).integers(0, n, batch)


def warmup_cosine(peak: float, steps: int):
    """Linear warmup over the first 10% of `steps`, then cosine decay to 5% of `peak`.

    Full fine-tuning uses it: a decaying rate makes the end of a short run
    settle instead of hovering at a constant step size, so the outcome does
    not hinge on rounding (one device or eight, one XLA version or the next).
    """
    import pdx

    warmup = max(1, steps // 10)
    cosine = pdx.optimizer.lr.CosineAnnealingDecay(peak, T_max=max(1, steps - warmup), eta_min=peak * 0.05)
    return pdx.optimizer.lr.LinearWarmup(cosine, warmup_steps=warmup, start_lr=peak * 0.05, end_lr=peak)


def pretrain_base(tok, directory: str, *, steps: int, seed: int, n_train: int, log_file: str = "") -> None:
    """Train a tiny LLaMA from scratch on the plain-text task and save it as a Hugging Face directory."""
    import jax.numpy as jnp

    import pdx
    from pdx.models.llama import LlamaConfig, LlamaForCausalLM, save_hf_pretrained

    train, _ = strings(seed, n_train, 0)
    rows = np.asarray([tok.encode(plain_text(s)) for s in train], np.int32)  # same length: bytes
    pdx.seed(seed)
    config = LlamaConfig.from_preset("tiny", vocab_size=tok.vocab_size, max_position_embeddings=128)
    model = LlamaForCausalLM(config)
    opt = pdx.optimizer.AdamW(learning_rate=3e-3, parameters=model, weight_decay=0.0)

    @pdx.jit
    def step_fn(model, opt, batch):
        loss, grads = pdx.value_and_grad(lambda m: m.loss(batch[:, :-1], batch[:, 1:], chunk_size=None))(model)
        opt.step(grads)
        return loss

    for step in range(steps):
        loss = step_fn(model, opt, jnp.asarray(rows[batch_at(len(rows), step, 64, seed)]))
        if (step + 1) % 100 == 0:
            emit({"event": "base", "step": step + 1, "loss": round(float(loss), 5)}, log_file)
    save_hf_pretrained(model, directory, tokenizer=tok)


def load_base(directory: str):
    """A LlamaForCausalLM from a Hugging Face directory (config.json + safetensors)."""
    import os

    from pdx import _safefile
    from pdx.models.llama import LlamaForCausalLM, config_from_hf, load_hf_safetensors

    raw = _safefile.read_file(os.path.join(directory, "config.json"), max_bytes=1 << 20, what="config.json")
    model = LlamaForCausalLM(config_from_hf(_safefile.load_json(raw, what="config.json"), max_position_embeddings=128))
    load_hf_safetensors(model, directory)
    return model


if __name__ == "__main__":
    sys.exit("this module is imported by recipes/llm_finetune.py and recipes/llm_dpo.py")
