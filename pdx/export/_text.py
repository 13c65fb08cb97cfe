"""Raw-text requests for a served artifact: tokenization on the server (`pdx serve --tokenizer DIR`).

The artifact takes one (batch, length) integer input (token ids). A
tokenizer directory in the Hugging Face layout whose tokenizer.json pads and
truncates to a fixed length (so rows batch together) turns strings into
that input on the server; requests send `{"inputs": [["a text", ...]]}`.
Token ids are still accepted as before.

Budgets, checked before anything is tokenized: at most `max_texts` texts per
request, each at most `max_text_bytes` UTF-8 bytes (and no lone surrogates);
token ids, sent or made, must lie in [0, vocabulary size). Larger requests are
refused (HTTP 413), bad ids and bad text with HTTP 400, naming the value and
the limit.
"""

from __future__ import annotations

import numpy as np

from pdx.jit import InputSpec

__all__ = ["TextPredictor", "DEFAULT_MAX_TEXTS", "DEFAULT_MAX_TEXT_BYTES"]

DEFAULT_MAX_TEXTS = 4096
DEFAULT_MAX_TEXT_BYTES = 64 * 1024


class TextPredictor:
    """A predictor whose one input may be strings, tokenized to fixed-length ids before the model runs.

    Args:
      predictor: a loaded artifact (`pdx.export.load`) with one integer input (batch, length).
      tokenizer: a `pdx.text.Tokenizer` whose `encode` returns the same number of ids for every
        text (tokenizer.json with fixed-length padding and truncation).
      max_texts: most texts (rows) per request.
      max_text_bytes: most UTF-8 bytes per text (a longer one is truncated by the tokenizer anyway).
      vocab_size: ids accepted are [0, vocab_size); default: the tokenizer's vocabulary size.

    Example:
      >>> tok = pdx.text.Tokenizer.from_pretrained("out/tok")              # doctest: +SKIP
      >>> p = TextPredictor(pdx.export.load("out/cls"), tok)              # doctest: +SKIP
      >>> p(["a sentence", "another one"]).shape                          # doctest: +SKIP
      (2, 4)
    """

    def __init__(self, predictor, tokenizer, *, max_texts: int = DEFAULT_MAX_TEXTS,
                 max_text_bytes: int = DEFAULT_MAX_TEXT_BYTES, vocab_size: int | None = None):
        for arg, value in (("max_texts", max_texts), ("max_text_bytes", max_text_bytes)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"--tokenizer: {arg} must be an int >= 1, got {value!r}")
        vocab_size = tokenizer.vocab_size if vocab_size is None else vocab_size
        if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 1:
            raise ValueError(f"--tokenizer: vocab_size must be an int >= 1, got {vocab_size!r}")
        if tokenizer.vocab_size > vocab_size:
            raise ValueError(f"--tokenizer: the tokenizer has {tokenizer.vocab_size} ids but the model's vocabulary "
                             f"has {vocab_size}; use the tokenizer the model was trained with")
        self.max_texts, self.max_text_bytes, self.vocab_size = max_texts, max_text_bytes, vocab_size
        specs = tuple(predictor.input_specs)
        if len(specs) != 1 or len(specs[0].shape) != 2 or not np.issubdtype(np.dtype(specs[0].dtype), np.integer):
            raise ValueError(f"--tokenizer: the artifact must take one integer input (batch, length) of token ids; "
                             f"it takes {[(s.name, list(s.shape), np.dtype(s.dtype).name) for s in specs]}")
        lengths = {len(ids) for ids in tokenizer.encode_batch(["", "a b c d e f g h i j k l m n o p q r s t u v w"])}
        if len(lengths) != 1:
            raise ValueError("--tokenizer: the tokenizer does not pad to a fixed length, so rows cannot batch; "
                             "save a tokenizer.json with fixed padding and truncation (tokenizers' "
                             "enable_padding(length=N) and enable_truncation(N))")
        length = lengths.pop()
        declared = specs[0].shape[1]
        if declared is not None and declared != length:
            raise ValueError(f"--tokenizer: the tokenizer gives {length} ids per text but the artifact's input "
                             f"{specs[0].name!r} has length {declared}; make them agree")
        self._predictor = predictor
        self._tokenizer = tokenizer
        self._dtype = np.dtype(specs[0].dtype)
        self.name = predictor.name
        self.output_names = tuple(getattr(predictor, "output_names", ()) or ())
        self.input_specs = (InputSpec([specs[0].shape[0], length], self._dtype, specs[0].name),)

    def check_inputs(self, *values) -> list[np.ndarray]:
        """Strings (one or a list) -> token ids; anything else is checked as ids by the artifact."""
        if len(values) != 1:
            raise ValueError(f"{self.name}: takes one input (texts or token ids); got {len(values)} inputs")
        value = values[0]
        name = self.input_specs[0].name
        if isinstance(value, str):
            value = [value]
        rows = len(value) if isinstance(value, (list, tuple)) else (value.shape[0] if getattr(value, "ndim", 0) else 1)
        if rows > self.max_texts:
            raise TextBudgetError(f"{self.name}: input {name!r} has {rows} rows, over the limit of {self.max_texts} "
                                  "per request (--max-request-rows); send fewer per request")
        if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
            for i, v in enumerate(value):
                try:
                    size = len(v.encode("utf-8"))
                except UnicodeEncodeError as e:
                    raise ValueError(f"{self.name}: text {i} of input {name!r} is not valid Unicode "
                                     f"({e.reason} at character {e.start}); send UTF-8 text") from None
                if size > self.max_text_bytes:
                    raise TextBudgetError(f"{self.name}: text {i} of input {name!r} has {size} bytes, over the limit "
                                          f"of {self.max_text_bytes} bytes per text (--max-text-bytes)")
            value = np.asarray(self._tokenizer.encode_batch(list(value)), self._dtype)
        elif isinstance(value, (list, tuple)) and any(isinstance(v, str) for v in value):
            raise ValueError(f"{self.name}: input {name!r} must be a list of strings or of "
                             "token-id rows, not a mix")
        arrays = self._predictor.check_inputs(value)
        ids = np.asarray(arrays[0])
        if ids.size and (ids.min() < 0 or ids.max() >= self.vocab_size):
            bad = int(ids.min()) if ids.min() < 0 else int(ids.max())
            raise ValueError(f"{self.name}: input {name!r} holds token id {bad}, outside the vocabulary "
                             f"[0, {self.vocab_size}) of {self.vocab_size} ids")
        return arrays

    def __call__(self, *values):
        return self._predictor(*self.check_inputs(*values))


class TextBudgetError(ValueError):
    """A request over the per-request text budget (answered 413 by the server)."""

    status = 413
