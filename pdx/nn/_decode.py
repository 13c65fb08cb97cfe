"""Sequence decoding (Paddle's `paddle.nn.decode`): `BeamSearchDecoder` and `dynamic_decode`.

`dynamic_decode` runs `decoder.step` in a Python loop until every sequence
has finished (or `max_step_num` is passed): the number of steps depends on the
data, so decoding runs eagerly, op by op (each step may itself call compiled
code, e.g. a cell whose forward is wrapped in `pdx.jit`).
"""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from pdx._dtype import default_float
from pdx._args import is_int

__all__ = ["BeamSearchDecoder", "Decoder", "dynamic_decode"]

_KINF = 1e9  # "minus infinity" of the beam scores, finite as in Paddle so sums stay ordered


def _gather_tree(ids, parents):
    """Backtrace beam-search parents: [T, B, K] step ids + parent beams -> [T, B, K] full sequences."""
    def back(parent, step):
        ids_t, parents_t = step
        return jnp.take_along_axis(parents_t, parent, axis=-1), jnp.take_along_axis(ids_t, parent, axis=-1)

    parents = parents.astype(jnp.int32)
    _, earlier = jax.lax.scan(back, parents[-1], (ids[:-1], parents[:-1]), reverse=True)
    return jnp.concatenate([earlier, ids[-1:]], axis=0)


@partial(jax.jit, static_argnames=("beam_size", "end_token"))
def _beam_search_math(logits, log_probs, finished, lengths, cell_states, *, beam_size, end_token):
    """One beam-search selection over [B, beam, V] logits (compiled once per shape)."""
    vocab = logits.shape[-1]
    step_log_probs = jax.nn.log_softmax(logits, axis=-1)
    # A finished beam continues only with end_token, at no cost.
    no_end = jnp.full((vocab,), -_KINF, step_log_probs.dtype).at[end_token].set(0.0)
    step_log_probs = jnp.where(finished[..., None], no_end, step_log_probs)
    total = step_log_probs + log_probs[..., None].astype(step_log_probs.dtype)
    top_scores, top_indices = jax.lax.top_k(jnp.reshape(total, (-1, beam_size * vocab)), beam_size)
    parents = top_indices // vocab
    tokens = top_indices % vocab

    def follow(x):  # x [B, beam, ...] reordered to the parent beams
        return jnp.take_along_axis(x, parents.reshape(parents.shape + (1,) * (x.ndim - 2)), axis=1)

    cell_states = jax.tree.map(follow, cell_states)
    next_finished = follow(finished)
    next_lengths = follow(lengths) + (~next_finished).astype(lengths.dtype)
    next_finished = next_finished | (tokens == end_token)
    return top_scores, tokens, parents, cell_states, next_finished, next_lengths


class Decoder:
    """Base of the decoders `dynamic_decode` runs (Paddle's `paddle.nn.decode.Decoder`).

    Subclasses implement `initialize(inits) -> (inputs, states, finished)`,
    `step(time, inputs, states, **kwargs) -> (outputs, next_states, next_inputs,
    finished)` and optionally `finalize(outputs, final_states, sequence_lengths)`.

    Example:
      >>> import pdx
      >>> pdx.nn.BeamSearchDecoder(pdx.nn.GRUCell(2, 2), 0, 1, 2).tracks_own_finished
      True
    """

    def initialize(self, inits):
        """Inputs, states and finished flags for the first step."""
        raise NotImplementedError

    def step(self, time, inputs, states, **kwargs):
        """One decoding step: (outputs, next_states, next_inputs, finished)."""
        raise NotImplementedError

    def finalize(self, outputs, final_states, sequence_lengths):
        """Post-process the stacked outputs (time major) and the final states."""
        raise NotImplementedError

    @property
    def tracks_own_finished(self) -> bool:
        """True when `step`'s finished flags are final (dynamic_decode does not OR them)."""
        return False


class BeamSearchDecoder(Decoder):
    """Beam search over a cell's outputs (Paddle's `nn.BeamSearchDecoder`).

    Every step runs the cell on `[batch_size * beam_size, ...]` inputs and
    states, turns `output_fn(cell outputs)` into log-probabilities, keeps the
    `beam_size` best continuations per batch entry (a finished beam only
    continues with `end_token` at no cost) and reorders the cell states to
    follow their parent beams. Tensors other than the cell's states that the
    cell uses per batch entry (an encoder output for attention) must be tiled
    first with `tile_beam_merge_with_batch`.

    Args:
      cell: an `RNNCellBase` (or any callable `(inputs, states) -> (outputs, new_states)`).
      start_token: id fed at the first step.
      end_token: id that finishes a beam.
      beam_size: number of beams kept per batch entry.
      embedding_fn: None or a callable mapping ids [B, beam] to the cell's inputs
        (usually an `nn.Embedding`); without it the cell gets the ids.
      output_fn: None or a callable mapping the cell's outputs to logits (usually an `nn.Linear`).

    Ids are int32 (JAX's default integer), where Paddle returns int64.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> cell = pdx.nn.GRUCell(4, 8)
      >>> dec = pdx.nn.BeamSearchDecoder(cell, start_token=0, end_token=1, beam_size=3,
      ...                                embedding_fn=pdx.nn.Embedding(10, 4), output_fn=pdx.nn.Linear(8, 10))
      >>> ids, _ = pdx.nn.dynamic_decode(dec, inits=jnp.zeros((2, 8)), max_step_num=4)
      >>> ids.shape[0], ids.shape[2]
      (2, 3)
    """

    class OutputWrapper(NamedTuple):
        """One step's output: scores, predicted_ids and parent_ids, each [batch, beam]."""

        scores: Any
        predicted_ids: Any
        parent_ids: Any

    class StateWrapper(NamedTuple):
        """The decoding state: cell_states ([batch, beam, ...]) and log_probs, finished, lengths ([batch, beam])."""

        cell_states: Any
        log_probs: Any
        finished: Any
        lengths: Any

    def __init__(self, cell, start_token, end_token, beam_size, embedding_fn=None, output_fn=None):
        for name, value in (("start_token", start_token), ("end_token", end_token)):
            if not is_int(value) or value < 0:
                raise ValueError(f"pdx.nn.BeamSearchDecoder: `{name}` must be a non-negative int id; "
                                 f"got {name}={value!r}")
        if not is_int(beam_size) or beam_size <= 0:
            raise ValueError(f"pdx.nn.BeamSearchDecoder: `beam_size` must be a positive int; got beam_size={beam_size!r}")
        if not callable(cell):
            raise TypeError(f"pdx.nn.BeamSearchDecoder: `cell` must be callable (an RNN cell); got {type(cell).__name__}")
        self.cell = cell
        self.embedding_fn = embedding_fn
        self.output_fn = output_fn
        self.start_token = int(start_token)
        self.end_token = int(end_token)
        self.beam_size = int(beam_size)

    @staticmethod
    def tile_beam_merge_with_batch(x, beam_size):
        """Repeat each batch entry `beam_size` times: [B, ...] -> [B * beam_size, ...]
        (entries t[0], t[0], ..., t[1], t[1], ...).

        Example:
          >>> import pdx, jax.numpy as jnp
          >>> pdx.nn.BeamSearchDecoder.tile_beam_merge_with_batch(jnp.array([[1], [2]]), 2)[:, 0].tolist()
          [1, 1, 2, 2]
        """
        return jnp.repeat(jnp.asarray(x), int(beam_size), axis=0)

    # -- shapes -------------------------------------------------------------------------------------
    def _split_batch_beams(self, x):
        return jnp.reshape(x, (-1, self.beam_size) + tuple(x.shape[1:]))

    def _merge_batch_beams(self, x):
        return jnp.reshape(x, (-1,) + tuple(x.shape[2:]))

    def _expand_to_beam_size(self, x):
        x = jnp.asarray(x)
        return jnp.broadcast_to(x[:, None], (x.shape[0], self.beam_size) + tuple(x.shape[1:]))

    # -- the decoder interface ----------------------------------------------------------------------
    def initialize(self, initial_cell_states):
        """Tile the cell states to the beams and start every beam at `start_token`.

        Returns:
          (initial_inputs, StateWrapper(cell_states, log_probs, finished, lengths), finished).
        """
        first = jax.tree.leaves(initial_cell_states)[0]
        batch = jnp.shape(first)[0]
        cell_states = jax.tree.map(self._expand_to_beam_size, initial_cell_states)
        ids = jnp.full((batch, self.beam_size), self.start_token, jnp.int32)
        dtype = default_float()
        row = np.array([0.0] + [-_KINF] * (self.beam_size - 1), dtype=dtype)
        log_probs = jnp.tile(jnp.asarray(row)[None], (batch, 1))
        finished = jnp.zeros((batch, self.beam_size), bool)
        lengths = jnp.zeros((batch, self.beam_size), jnp.int32)
        inputs = self.embedding_fn(ids) if self.embedding_fn is not None else ids
        return inputs, self.StateWrapper(cell_states, log_probs, finished, lengths), finished

    def _beam_search_step(self, time, logits, next_cell_states, beam_state):
        vocab = logits.shape[-1]
        if not 0 <= self.end_token < vocab:
            raise ValueError(f"pdx.nn.BeamSearchDecoder: end_token={self.end_token} is not an id of the "
                             f"{vocab}-way output; check output_fn")
        scores, tokens, parents, cell_states, finished, lengths = _beam_search_math(
            logits, beam_state.log_probs, beam_state.finished, beam_state.lengths, next_cell_states,
            beam_size=self.beam_size, end_token=self.end_token)
        return (self.OutputWrapper(scores, tokens, parents),
                self.StateWrapper(cell_states, scores, finished, lengths))

    def step(self, time, inputs, states, **kwargs):
        """Run the cell on every beam and keep the best `beam_size` continuations.

        Returns:
          (OutputWrapper(scores, predicted_ids, parent_ids), StateWrapper(...),
          next_inputs, finished).
        """
        inputs = jax.tree.map(self._merge_batch_beams, inputs)
        cell_states = jax.tree.map(self._merge_batch_beams, states.cell_states)
        cell_outputs, next_cell_states = self.cell(inputs, cell_states, **kwargs)
        cell_outputs = jax.tree.map(self._split_batch_beams, cell_outputs)
        next_cell_states = jax.tree.map(self._split_batch_beams, next_cell_states)
        if self.output_fn is not None:
            cell_outputs = self.output_fn(cell_outputs)
        output, state = self._beam_search_step(time, cell_outputs, next_cell_states, states)
        ids = jax.lax.stop_gradient(output.predicted_ids)
        next_inputs = self.embedding_fn(ids) if self.embedding_fn is not None else ids
        return output, state, next_inputs, state.finished

    def finalize(self, outputs, final_states, sequence_lengths):
        """Backtrace the beams: predicted ids [T, batch, beam] of whole sequences."""
        return _gather_tree(outputs.predicted_ids, outputs.parent_ids), final_states

    @property
    def tracks_own_finished(self) -> bool:
        """True: beams are reordered, so the decoder's own finished flags are the truth."""
        return True


def dynamic_decode(decoder, inits=None, max_step_num=None, output_time_major=False, impute_finished=False,
                   is_test=False, return_length=False, **kwargs):
    """Run `decoder.step` until every sequence is finished (Paddle's `nn.dynamic_decode`).

    Args:
      decoder: a `Decoder` such as `BeamSearchDecoder`.
      inits: passed to `decoder.initialize` (a BeamSearchDecoder's initial cell states).
      max_step_num: None, or stop after step `max_step_num` (at most max_step_num + 1 steps, as Paddle).
      output_time_major: outputs [T, batch, ...] instead of [batch, T, ...].
      impute_finished: for decoders that do not track their own finished flags,
        keep the states of finished entries unchanged.
      is_test: accepted for compatibility (no effect).
      return_length: also return the decoded lengths.
      **kwargs: passed to every `decoder.step`.

    Returns:
      (final_outputs, final_states), plus sequence_lengths when return_length.

    The loop stops on a data-dependent condition, so it runs eagerly: calling
    it inside `pdx.jit` / `jax.jit` raises a concretization error.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> dec = pdx.nn.BeamSearchDecoder(pdx.nn.GRUCell(4, 8), 0, 1, 2, embedding_fn=pdx.nn.Embedding(6, 4),
      ...                                output_fn=pdx.nn.Linear(8, 6))
      >>> ids, states, lengths = pdx.nn.dynamic_decode(dec, jnp.zeros((3, 8)), max_step_num=5, return_length=True)
      >>> ids.shape[0], lengths.shape
      (3, (3, 2))
    """
    if max_step_num is not None and (not is_int(max_step_num) or max_step_num < 0):
        raise ValueError(f"pdx.nn.dynamic_decode: `max_step_num` must be None or a non-negative int; "
                         f"got max_step_num={max_step_num!r}")
    inputs, states, finished = decoder.initialize(inits)
    finished = jnp.asarray(finished)
    lengths = jnp.zeros(finished.shape, jnp.int32)
    steps: list = []
    step = 0
    while not bool(jnp.all(finished)):
        out, next_states, next_inputs, next_finished = decoder.step(
            jnp.full((1,), step, jnp.int32), inputs, states, **kwargs)
        if not decoder.tracks_own_finished:
            # As Paddle: the finished flags are updated first, so the step that
            # finishes an entry neither counts in its length nor (imputed) changes its state.
            finished = jnp.logical_or(next_finished, finished)
            next_lengths = lengths + (~finished).astype(lengths.dtype)
            if impute_finished:
                next_states = jax.tree.map(
                    lambda old, new: jnp.where(finished.reshape(finished.shape + (1,) * (jnp.ndim(new) - 1)),
                                               old, new), states, next_states)
            next_finished = finished
        else:
            next_lengths = getattr(next_states, "lengths", lengths)
        steps.append(out)
        inputs, states, finished, lengths = next_inputs, next_states, next_finished, next_lengths
        step += 1
        if max_step_num is not None and step > max_step_num:
            break
    if not steps:
        raise ValueError("pdx.nn.dynamic_decode: every entry is finished at initialization, so nothing was "
                         "decoded; check decoder.initialize")
    outputs = jax.tree.map(lambda *xs: jnp.stack(xs), *steps)
    try:
        outputs, states = decoder.finalize(outputs, states, lengths)
    except NotImplementedError:
        pass
    if not output_time_major:
        outputs = jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), outputs)
    return (outputs, states, lengths) if return_length else (outputs, states)
