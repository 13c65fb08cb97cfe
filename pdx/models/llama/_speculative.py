"""Speculative decoding settings for LLMEngine, and the prompt-lookup (n-gram) proposer.

Each decode step, a cheap proposer guesses the next `num_speculative_tokens`
tokens of a sequence; the target model scores the sequence's last token and
every guess in one call, and `pdx.models.llama._sampling.verify` keeps the
longest prefix of guesses the target agrees with plus one token of its own.
A step therefore yields between 1 and k + 1 tokens for one target call, and
the output is exactly what the target alone produces (greedy) or is
distributed as it (sampling).

Proposers:
  "ngram"  prompt lookup: the tokens that followed the latest earlier
           occurrence of the sequence's last n tokens (n from
           `prompt_lookup_max` down to `prompt_lookup_min`). No model; strong
           when the output copies from the prompt (extraction, editing, code).
  "draft"  a smaller LlamaForCausalLM with the same vocabulary (a zoo preset
           or a distilled model) proposes k tokens autoregressively over its
           own paged KV cache, which shares the target's block tables.

Example:
  >>> from pdx.models.llama._speculative import SpeculativeConfig, ngram_propose
  >>> SpeculativeConfig("ngram", num_speculative_tokens=3).num_speculative_tokens
  3
  >>> ngram_propose([5, 6, 7, 8, 5, 6], k=3, n_max=2, n_min=1)
  [7, 8, 5]
"""

from __future__ import annotations

import dataclasses

__all__ = ["SpeculativeConfig", "ngram_propose"]

METHODS = ("ngram", "draft")


@dataclasses.dataclass(frozen=True)
class SpeculativeConfig:
    """How LLMEngine speculates (vLLM's names).

    Args:
      method: "ngram" (prompt lookup) or "draft" (a draft model).
      num_speculative_tokens: tokens proposed per step (k).
      draft_model: the draft `LlamaForCausalLM` for method "draft" (same vocab_size as the target).
      prompt_lookup_max / prompt_lookup_min: n-gram lengths tried for "ngram", longest first.
      disable_by_batch_size: decode plainly while this many or more sequences decode at once
        (a crowded step is compute-bound: checking k proposals per row costs more than it saves); None: always.
    """

    method: str = "ngram"
    num_speculative_tokens: int = 4
    draft_model: object | None = None
    prompt_lookup_max: int = 3
    prompt_lookup_min: int = 1
    disable_by_batch_size: int | None = None

    def check(self, target_config, max_len: int) -> None:
        if self.method not in METHODS:
            raise ValueError(f"SpeculativeConfig: method must be one of {METHODS}; got {self.method!r}")
        k = self.num_speculative_tokens
        if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= 16:
            raise ValueError(f"SpeculativeConfig: num_speculative_tokens must be an int in [1, 16]; got {k!r}")
        lo, hi = self.prompt_lookup_min, self.prompt_lookup_max
        if not all(isinstance(n, int) and not isinstance(n, bool) for n in (lo, hi)) or not 1 <= lo <= hi:
            raise ValueError(f"SpeculativeConfig: need 1 <= prompt_lookup_min <= prompt_lookup_max (ints); got "
                             f"{lo!r} and {hi!r}")
        limit = self.disable_by_batch_size
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
            raise ValueError(f"SpeculativeConfig: disable_by_batch_size must be None or an int >= 1; got {limit!r}")
        draft = self.draft_model
        if self.method == "ngram":
            if draft is not None:
                raise ValueError("SpeculativeConfig: draft_model is only used with method='draft'; drop it or "
                                 "set method='draft'")
            return
        config = getattr(draft, "config", None)
        if config is None or not callable(getattr(draft, "paged_forward", None)):
            raise ValueError(f"SpeculativeConfig: method='draft' needs draft_model=a LlamaForCausalLM; got "
                             f"{type(draft).__name__}")
        if config.vocab_size != target_config.vocab_size:
            raise ValueError(f"SpeculativeConfig: the draft model's vocab_size {config.vocab_size} differs from "
                             f"the target's {target_config.vocab_size}; the draft must share the tokenizer")
        if config.max_position_embeddings < max_len:
            raise ValueError(f"SpeculativeConfig: the draft model's max_position_embeddings "
                             f"{config.max_position_embeddings} is below max_len={max_len}")


def ngram_propose(tokens, k: int, n_max: int, n_min: int) -> list[int]:
    """Up to k tokens that followed the latest earlier occurrence of the last n tokens (longest n first)."""
    size = len(tokens)
    for n in range(min(n_max, size - 1), n_min - 1, -1):
        tail = tokens[size - n:]
        for start in range(size - n - 1, -1, -1):
            if tokens[start:start + n] == tail:
                return list(tokens[start + n:start + n + k])
    return []
