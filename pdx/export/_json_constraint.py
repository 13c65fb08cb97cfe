"""`response_format={"type": "json_object"}`: an engine constraint that keeps the output a JSON-object prefix.

A small character-level JSON-prefix checker runs over each token's decoded
string (computed once per tokenizer, `JSONVocab`); `JSONObjectConstraint`
allows only the tokens that keep the text generated so far a valid prefix of
one JSON object and reports `finished` when the object is closed. It is
bounded: nesting at most `max_depth`, strings at most `max_string` characters,
numbers plain (`-?(0|[1-9][0-9]*)(\\.[0-9]+)?`), no whitespace, and a token
is allowed only if the object can still be closed, one character a token, in
the budget left, so the output always `json.loads` to a dict when the budget
is at least 2 tokens.

    >>> from pdx.text import train_bpe
    >>> tok = train_bpe(['{"a": 1}'] * 20, vocab_size=270)
    >>> vocab = JSONVocab(tok)
    >>> c = JSONObjectConstraint(vocab, budget=16)
    >>> sorted({vocab.strings[i] for i, ok in enumerate(c.allowed([])) if ok})
    ['{', '{"']
    >>> c.finished([])
    False
"""

import collections

import numpy as np

__all__ = ["JSONObjectConstraint", "JSONVocab", "json_constraint"]

_DIGITS = "0123456789"
_LITERALS = {"t": "rue", "f": "alse", "n": "ull"}
_SUPPORTED = ("text", "json_object")


def _step(state, ch, max_depth: int, max_string: int):
    """The state after one more character, or None if the text would no longer be a JSON-object prefix.

    A state is (mode, stack, extra): stack holds the open '{' / '[', extra the string length or literal tail.
    """
    mode, stack, extra = state
    if mode in ("num_int", "num_zero", "num_frac"):
        if ch in _DIGITS and mode != "num_zero" and extra < 12:
            return mode, stack, extra + 1
        if ch == "." and mode != "num_frac":
            return "num_dot", stack, 0
        state = mode, stack, extra = "after", stack, 0
    if mode == "start":
        return ("obj_first", "{", 0) if ch == "{" else None
    if mode in ("str_key", "str_val"):
        if ch == '"':
            return ("colon" if mode == "str_key" else "after"), stack, 0
        if ch == "\\":
            return "esc" + mode[3:], stack, extra
        if ch < " " or extra >= max_string:
            return None
        return mode, stack, extra + 1
    if mode in ("esc_key", "esc_val"):
        return ("str" + mode[3:], stack, extra + 1) if ch in '"\\/bfnrt' else None
    if mode == "lit":
        if ch != extra[0]:
            return None
        return ("lit", stack, extra[1:]) if len(extra) > 1 else ("after", stack, 0)
    if mode in ("num_sign", "num_dot"):
        if ch not in _DIGITS:
            return None
        return ("num_frac" if mode == "num_dot" else "num_zero" if ch == "0" else "num_int"), stack, 1
    if mode == "obj_first" and ch == "}" or mode == "arr_first" and ch == "]":
        return _close(stack)
    if mode in ("obj_first", "obj_key"):
        return ("str_key", stack, 0) if ch == '"' else None
    if mode == "colon":
        return ("value", stack, 0) if ch == ":" else None
    if mode == "after":
        if ch == ",":
            return ("obj_key" if stack[-1] == "{" else "value"), stack, 0
        if ch == ("}" if stack[-1] == "{" else "]"):
            return _close(stack)
        return None
    if mode in ("value", "arr_first"):
        if ch in "{[":
            if len(stack) >= max_depth:
                return None
            return ("obj_first" if ch == "{" else "arr_first"), stack + ch, 0
        if ch == '"':
            return "str_val", stack, 0
        if ch == "-":
            return "num_sign", stack, 0
        if ch in _DIGITS:
            return ("num_zero" if ch == "0" else "num_int"), stack, 1
        if ch in _LITERALS:
            return "lit", stack, _LITERALS[ch]
    return None  # "done": nothing may follow the object


def _close(stack: str):
    return ("done", "", 0) if len(stack) == 1 else ("after", stack[:-1], 0)


def _distance(state) -> int:
    """The fewest characters that close the object from this state."""
    mode, stack, extra = state
    base = len(stack)
    return base + {"start": 2, "done": 0, "str_key": 3, "esc_key": 4, "obj_key": 4, "colon": 2,
                   "str_val": 1, "esc_val": 2, "value": 1, "num_sign": 1, "num_dot": 1,
                   "lit": len(extra) if mode == "lit" else 0}.get(mode, 0)


def _feed(state, piece, max_depth: int, max_string: int):
    """The state after a token's string, or None if it breaks the object prefix."""
    for ch in piece:
        state = _step(state, ch, max_depth, max_string)
        if state is None:
            return None
    return state


class JSONVocab:
    """Each token's decoded string, computed once per tokenizer (special tokens and tokens that decode to nothing
    or to a partial UTF-8 sequence are never allowed)."""

    def __init__(self, tokenizer):
        size = tokenizer.vocab_size
        self.size = size
        self.strings = []
        for i in range(size):
            piece = tokenizer.decode([i])
            special = piece != tokenizer.decode([i], skip_special_tokens=True)  # </s> would end the answer
            self.strings.append(piece if piece and "\ufffd" not in piece and not special else None)
        self._reach = collections.OrderedDict()   # (state, limits) -> distance to close after each token

    def distances(self, state, max_depth: int, max_string: int):
        """Per token: characters still needed to close the object after it (int32, -1 where it breaks the JSON).

        Computed once per parser state and kept for the most recent 256 states:
        requests and steps in the same state (inside a string, after a comma...)
        share one scan of the vocabulary.
        """
        key = (state, max_depth, max_string)
        hit = self._reach.get(key)
        if hit is not None:
            self._reach.move_to_end(key)
            return hit
        out = np.full(self.size, -1, np.int32)
        for i, piece in enumerate(self.strings):
            if piece is None:
                continue
            after = _feed(state, piece, max_depth, max_string)
            if after is not None:
                out[i] = _distance(after)
        self._reach[key] = out
        if len(self._reach) > 256:
            self._reach.popitem(last=False)
        return out


class JSONObjectConstraint:
    """The engine constraint for one request: `allowed(ids)` a bool mask over the vocabulary, `finished(ids)`."""

    def __init__(self, vocab: JSONVocab, budget: int, *, max_depth: int = 8, max_string: int = 64):
        self.vocab, self.budget = vocab, budget
        self.max_depth, self.max_string = max_depth, max_string
        self._ids, self._state = [], ("start", "", 0)

    def _at(self, ids):
        ids = list(ids)
        if ids[: len(self._ids)] != self._ids:
            self._ids, self._state = [], ("start", "", 0)
        for i in ids[len(self._ids):]:
            piece = self.vocab.strings[i] if 0 <= i < self.vocab.size else None
            if piece is None or self._state is None:
                self._state = None
            else:
                self._state = _feed(self._state, piece, self.max_depth, self.max_string)
        self._ids = ids
        return self._state

    def allowed(self, ids):
        state = self._at(ids)
        mask = np.zeros(len(self.vocab.strings), dtype=bool)
        if state is None or state[0] == "done":
            return mask
        left = self.budget - len(ids) - 1  # tokens left after this one; each can close at least one character
        reach = self.vocab.distances(state, self.max_depth, self.max_string)
        mask[: len(reach)] = (reach >= 0) & (reach <= left)
        return mask

    def finished(self, ids) -> bool:
        state = self._at(ids)
        return state is not None and state[0] == "done"


def json_constraint(response_format, vocab_fn, budget: int):
    """The constraint for a request's `response_format` (None for text); ValueError naming the supported types."""
    if response_format is None:
        return None
    kind = response_format.get("type") if isinstance(response_format, dict) else None
    if kind not in _SUPPORTED or set(response_format) != {"type"}:
        raise ValueError(f"response_format={response_format!r:.200} is not supported; use "
                         f"{{\"type\": \"text\"}} or {{\"type\": \"json_object\"}}")
    return None if kind == "text" else JSONObjectConstraint(vocab_fn(), budget)
