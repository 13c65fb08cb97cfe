"""Raw-text requests for a served artifact: tokenization on the server (`pdx serve --tokenizer DIR`).

The artifact takes one (batch, length) integer input (token ids). A
tokenizer directory in the Hugging Face layout whose tokenizer.json pads and
truncates to a fixed length (so rows batch together) turns strings into
that input on the server; requests send `{"inputs": [["a text", ...]]}`.
Token ids are still accepted as before.
"""

from __future__ import annotations

import numpy as np

from pdx.jit import InputSpec

__all__ = ["TextPredictor"]


class TextPredictor:
    """A predictor whose one input may be strings, tokenized to fixed-length ids before the model runs.

    Args:
      predictor: a loaded artifact (`pdx.export.load`) with one integer input (batch, length).
      tokenizer: a `pdx.text.Tokenizer` whose `encode` returns the same number of ids for every
        text (tokenizer.json with fixed-length padding and truncation).

    Example:
      >>> tok = pdx.text.Tokenizer.from_pretrained("out/tok")              # doctest: +SKIP
      >>> p = TextPredictor(pdx.export.load("out/cls"), tok)              # doctest: +SKIP
      >>> p(["a sentence", "another one"]).shape                          # doctest: +SKIP
      (2, 4)
    """

    def __init__(self, predictor, tokenizer):
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
        if isinstance(value, str):
            value = [value]
        if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
            value = np.asarray(self._tokenizer.encode_batch(list(value)), self._dtype)
        elif isinstance(value, (list, tuple)) and any(isinstance(v, str) for v in value):
            raise ValueError(f"{self.name}: input {self.input_specs[0].name!r} must be a list of strings or of "
                             "token-id rows, not a mix")
        return self._predictor.check_inputs(value)

    def __call__(self, *values):
        return self._predictor(*self.check_inputs(*values))
