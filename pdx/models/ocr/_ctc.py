"""CTC decoding (greedy and prefix beam search) and recognition metrics, on the host in numpy."""

from __future__ import annotations

import collections
from typing import NamedTuple, Sequence

import numpy as np

_NEG_INF = -np.inf


def _as_batch(values, lengths, *, op: str):
    x = np.asarray(values)
    if x.ndim != 3:
        raise ValueError(f"{op}: expected (batch, time, classes) scores; got shape {x.shape}")
    if lengths is None:
        lengths = np.full((x.shape[0],), x.shape[1], np.int64)
    lengths = np.asarray(lengths).reshape(-1)
    if lengths.shape[0] != x.shape[0] or np.any(lengths < 0) or np.any(lengths > x.shape[1]):
        raise ValueError(f"{op}: lengths must be {x.shape[0]} values in [0, {x.shape[1]}]; got {lengths.tolist()}")
    return x, lengths


def ctc_greedy_decode(logits, *, lengths=None, blank: int = 0) -> list:
    """Best path decoding: argmax per step, merge repeats, drop blanks.

    Args:
      logits: (batch, time, classes) scores (logits, probabilities or log-probabilities).
      lengths: optional (batch,) valid time steps.
      blank: the blank class id.

    Returns:
      A list of `batch` lists of class ids.

    Example:
      >>> ctc_greedy_decode(np.eye(3)[[[1, 1, 0, 1, 2]]])
      [[1, 1, 2]]
    """
    x, lengths = _as_batch(logits, lengths, op="ctc_greedy_decode")
    best = np.argmax(x, axis=-1)
    out = []
    for row, length in zip(best, lengths):
        path = row[:length]
        keep = np.ones(len(path), bool)
        keep[1:] = path[1:] != path[:-1]
        out.append([int(c) for c in path[keep] if c != blank])
    return out


def _logsumexp(*values: float) -> float:
    top = max(values)
    if top == _NEG_INF:
        return _NEG_INF
    return top + float(np.log(sum(np.exp(v - top) for v in values)))


def _prefix_beam(log_probs: np.ndarray, beam_width: int, blank: int, prune_logp: float | None):
    # Each prefix keeps two scores: paths ending in a blank and paths ending in its last label,
    # since a repeated label only extends the prefix after a blank.
    beams = {(): (0.0, _NEG_INF)}
    for step in log_probs:
        nxt = collections.defaultdict(lambda: [_NEG_INF, _NEG_INF])
        classes = range(len(step)) if prune_logp is None else np.nonzero(step >= prune_logp)[0]
        for prefix, (p_blank, p_label) in beams.items():
            total = _logsumexp(p_blank, p_label)
            for c in classes:
                lp = float(step[c])
                if c == blank:
                    entry = nxt[prefix]
                    entry[0] = _logsumexp(entry[0], total + lp)
                    continue
                extended = prefix + (int(c),)
                entry = nxt[extended]
                if prefix and prefix[-1] == c:
                    entry[1] = _logsumexp(entry[1], p_blank + lp)
                    same = nxt[prefix]
                    same[1] = _logsumexp(same[1], p_label + lp)
                else:
                    entry[1] = _logsumexp(entry[1], total + lp)
        scored = [(prefix, scores, _logsumexp(*scores)) for prefix, scores in nxt.items()]
        ranked = sorted((item for item in scored if item[2] > _NEG_INF), key=lambda item: item[2], reverse=True)
        beams = {prefix: tuple(scores) for prefix, scores, _ in ranked[:beam_width]}
    return sorted(((list(p), _logsumexp(*s)) for p, s in beams.items()), key=lambda r: r[1], reverse=True)


def ctc_beam_search_decode(log_probs, *, beam_width: int = 8, lengths=None, blank: int = 0, top_paths: int = 1,
                           prune_logp: float | None = None) -> list:
    """CTC prefix beam search: the labelings with the highest total probability over their alignments.

    Each kept prefix carries the log-probability of all alignments that produce it (split by
    whether they end in a blank); with a beam as wide as the number of labelings the scores are
    exact sums over alignments.

    Args:
      log_probs: (batch, time, classes) log-probabilities (log_softmax of the logits).
      beam_width: prefixes kept per step (>= 1).
      lengths: optional (batch,) valid time steps.
      blank: the blank class id.
      top_paths: labelings returned per sample (<= beam_width).
      prune_logp: skip classes whose log-probability at a step is below this (speed); None = try all.

    Returns:
      A list of `batch` lists of (class ids, log-probability), best first, `top_paths` long at most.

    Example:
      >>> lp = np.log(np.full((1, 2, 2), 0.5))
      >>> [(ids, round(float(np.exp(s)), 2)) for ids, s in ctc_beam_search_decode(lp, top_paths=2)[0]]
      [([1], 0.75), ([], 0.25)]
    """
    if not isinstance(beam_width, int) or beam_width < 1:
        raise ValueError(f"ctc_beam_search_decode: beam_width must be a positive int; got beam_width={beam_width!r}")
    if not isinstance(top_paths, int) or not 1 <= top_paths <= beam_width:
        raise ValueError(f"ctc_beam_search_decode: top_paths must be in [1, beam_width={beam_width}]; "
                         f"got top_paths={top_paths!r}")
    x, lengths = _as_batch(log_probs, lengths, op="ctc_beam_search_decode")
    x = x.astype(np.float64)
    return [_prefix_beam(row[:length], beam_width, blank, prune_logp)[:top_paths] for row, length in zip(x, lengths)]


def edit_distance(a: Sequence, b: Sequence) -> int:
    """Levenshtein distance (insertions, deletions, substitutions each cost 1)."""
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
        prev = cur
    return prev[-1]


class RecognitionMetrics(NamedTuple):
    """char_accuracy = 1 - total edit distance / total target characters; word_accuracy = exact matches."""

    char_accuracy: float
    word_accuracy: float
    count: int


def recognition_metrics(predictions: Sequence[str], targets: Sequence[str]) -> RecognitionMetrics:
    """Character and word accuracy of predicted strings against the targets.

    Example:
      >>> recognition_metrics(["abc", "xy"], ["abc", "xyz"])
      RecognitionMetrics(char_accuracy=0.8333333333333334, word_accuracy=0.5, count=2)
    """
    if len(predictions) != len(targets) or not targets:
        raise ValueError(f"recognition_metrics: need as many predictions as targets (> 0); got "
                         f"{len(predictions)} predictions and {len(targets)} targets")
    errors = sum(edit_distance(p, t) for p, t in zip(predictions, targets))
    chars = sum(len(t) for t in targets)
    words = sum(p == t for p, t in zip(predictions, targets))
    return RecognitionMetrics(1.0 - errors / max(chars, 1), words / len(targets), len(targets))
