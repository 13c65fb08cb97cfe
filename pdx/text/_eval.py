"""Language-model evaluation: perplexity on held-out tokens, multiple-choice log-likelihood (the lm-eval way).

Both take any causal LM called as `model(ids) -> logits (B, S, V)` (and
`positions=`, `segment_ids=` for packed rows), run it under one compiled
function per batch shape, and accumulate in float64 on the host.

A multiple-choice task is a local JSON-lines file (or a list of dicts) with
`context`, `choices` (strings) and `answer` (the index of the right one);
each choice is scored by the summed log-probability of its tokens after the
context (`acc`) and by that sum per byte of the choice (`acc_norm`).
"""

from __future__ import annotations

import math
import os

import numpy as np

from pdx import _safefile
from pdx.text._tokenizer import TokenizerError

__all__ = ["load_choice_task", "multiple_choice", "perplexity"]


def _logprobs_fn():
    import jax
    import jax.numpy as jnp

    import pdx

    @pdx.jit
    def token_logprobs(model, ids, labels, positions, segment_ids):
        logits = model(ids, positions=positions, segment_ids=segment_ids).astype(jnp.float32)
        logp = jax.nn.log_softmax(logits, axis=-1)
        keep = labels >= 0
        picked = jnp.take_along_axis(logp, jnp.where(keep, labels, 0)[..., None], axis=-1)[..., 0]
        return jnp.where(keep, picked, 0.0), keep

    return token_logprobs


_FN: list = []


def _token_logprobs(model, ids, labels, positions=None, segment_ids=None):
    if not _FN:
        _FN.append(_logprobs_fn())
    was_training = model.training
    model.eval()
    try:
        return _FN[0](model, ids, labels, positions, segment_ids)
    finally:
        if was_training:
            model.train()


def perplexity(model, rows, batch_size: int = 8) -> dict:
    """Perplexity of `model` on packed rows: a `PackedDataset` or a list of dicts with tokens/labels(/segment_ids/positions).

    Returns {"loss": mean negative log-likelihood per predicted token, "perplexity": exp(loss), "tokens": count}.

    Example: `pdx.text.perplexity(model, PackedDataset(TokenFile("val"), 512))["perplexity"]`.
    """
    total, count = 0.0, 0
    n = len(rows)
    for start in range(0, n, batch_size):
        batch = [rows[i] for i in range(start, min(n, start + batch_size))]
        stack = {k: np.stack([r[k] for r in batch]) for k in batch[0]}
        logp, keep = _token_logprobs(model, stack["tokens"], stack["labels"], stack.get("positions"),
                                     stack.get("segment_ids"))
        total -= float(np.asarray(logp, np.float64).sum())
        count += int(np.asarray(keep).sum())
    if count == 0:
        raise ValueError("perplexity: no token to predict (every label is ignore_index)")
    return {"loss": total / count, "perplexity": math.exp(total / count), "tokens": count}


def load_choice_task(path) -> list[dict]:
    """A multiple-choice task from JSON lines: {"context": str, "choices": [str, ...], "answer": int} per line."""
    path = os.fspath(path)
    raw = _safefile.read_file(path, max_bytes=1 << 30, what="task file", error=TokenizerError)
    items = []
    for n, line in enumerate(raw.decode("utf-8").splitlines(), 1):
        if not line.strip():
            continue
        item = _safefile.load_json(line, what=f"{path} line {n}", error=TokenizerError)
        if not (isinstance(item, dict) and isinstance(item.get("context"), str)
                and isinstance(item.get("choices"), list) and len(item["choices"]) >= 2
                and all(isinstance(c, str) and c for c in item["choices"])
                and isinstance(item.get("answer"), int) and 0 <= item["answer"] < len(item["choices"])):
            raise TokenizerError(f"{path} line {n}: expected {{\"context\": str, \"choices\": [2+ non-empty str], "
                                 "\"answer\": index into choices}")
        items.append(item)
    return items


def multiple_choice(model, tokenizer, task, batch_size: int = 16) -> dict:
    """Accuracy of picking the most likely choice: {"acc", "acc_norm", "n"}.

    Args:
      model: a causal LM.
      tokenizer: a `pdx.text.Tokenizer`.
      task: a list of {"context", "choices", "answer"} or a path for `load_choice_task`.

    Example: `pdx.text.multiple_choice(model, tok, "task.jsonl")["acc"]`.
    """
    items = load_choice_task(task) if isinstance(task, (str, os.PathLike)) else list(task)
    sequences, spans, owners = [], [], []
    for k, item in enumerate(items):
        context = tokenizer.encode(item["context"])
        for choice in item["choices"]:
            cont = tokenizer.encode(choice, add_special_tokens=False)
            sequences.append(context + cont)
            spans.append((len(context), len(context) + len(cont)))
            owners.append(k)
    width = max(len(s) for s in sequences) - 1
    scores = np.zeros(len(sequences))
    for start in range(0, len(sequences), batch_size):
        chunk = range(start, min(len(sequences), start + batch_size))
        ids = np.zeros((batch_size, width), np.int32)
        labels = np.full((batch_size, width), -100, np.int32)
        for row, i in enumerate(chunk):
            seq, (a, b) = sequences[i], spans[i]
            ids[row, : len(seq) - 1] = seq[:-1]
            labels[row, a - 1:b - 1] = seq[a:b]   # position p predicts token p + 1: only the choice's tokens
        logp, _ = _token_logprobs(model, ids, labels)
        scores[list(chunk)] = np.asarray(logp, np.float64).sum(-1)[: len(chunk)]
    acc = acc_norm = 0
    i = 0
    for item in items:
        m = len(item["choices"])
        s = scores[i:i + m]
        per_byte = s / np.array([len(c.encode("utf-8")) for c in item["choices"]])
        acc += int(np.argmax(s)) == item["answer"]
        acc_norm += int(np.argmax(per_byte)) == item["answer"]
        i += m
    return {"acc": acc / len(items), "acc_norm": acc_norm / len(items), "n": len(items)}
