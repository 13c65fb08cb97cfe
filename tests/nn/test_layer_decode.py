"""BeamSearchDecoder + dynamic_decode against paddle on a small seq2seq decoder with copied weights."""

import jax.numpy as jnp
import numpy as np
import pytest

import pdx.nn as nn
from layer_testutil import assert_close, load_from_paddle

V, E, H, B, K = 12, 5, 8, 3, 4


def _decoders(paddle, cell_name):
    pd_parts = (paddle.nn.Embedding(V, E), getattr(paddle.nn, cell_name)(E, H), paddle.nn.Linear(H, V))
    parts = (nn.Embedding(V, E), getattr(nn, cell_name)(E, H), nn.Linear(H, V))
    for ours, theirs in zip(parts, pd_parts):
        load_from_paddle(ours, theirs)
    emb, cell, out = parts
    pd_emb, pd_cell, pd_out = pd_parts
    return (nn.BeamSearchDecoder(cell, 0, 1, K, embedding_fn=emb, output_fn=out),
            paddle.nn.BeamSearchDecoder(pd_cell, 0, 1, K, embedding_fn=pd_emb, output_fn=pd_out))


def test_beam_search_matches_paddle(paddle, rng):
    h0 = rng.standard_normal((B, H)).astype(np.float32)
    for cell_name, max_steps, time_major in (("GRUCell", 6, False), ("LSTMCell", 9, True)):
        dec, pd_dec = _decoders(paddle, cell_name)
        if cell_name == "LSTMCell":
            inits, pd_inits = (jnp.asarray(h0), jnp.asarray(h0 * 0.5)), (paddle.to_tensor(h0),
                                                                           paddle.to_tensor(h0 * 0.5))
        else:
            inits, pd_inits = jnp.asarray(h0), paddle.to_tensor(h0)
        ids, states, lengths = nn.dynamic_decode(dec, inits, max_step_num=max_steps, output_time_major=time_major,
                                                 return_length=True)
        pd_ids, pd_states, pd_lengths = paddle.nn.dynamic_decode(pd_dec, pd_inits, max_step_num=max_steps,
                                                                 output_time_major=time_major, return_length=True)
        assert ids.shape == tuple(pd_ids.shape)
        np.testing.assert_array_equal(np.asarray(ids), pd_ids.numpy())
        np.testing.assert_array_equal(np.asarray(lengths), pd_lengths.numpy())
        np.testing.assert_array_equal(np.asarray(states.finished), pd_states.finished.numpy())
        assert_close(states.log_probs, pd_states.log_probs, rtol=1e-5, atol=1e-4)


def test_tile_and_gather_tree(paddle, rng):
    from pdx.nn._decode import _gather_tree

    x = rng.standard_normal((3, 2, 4)).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(nn.BeamSearchDecoder.tile_beam_merge_with_batch(jnp.asarray(x), 3)),
                                  paddle.nn.BeamSearchDecoder.tile_beam_merge_with_batch(paddle.to_tensor(x), 3).numpy())
    ids = rng.integers(0, 9, (5, 2, 3))
    parents = rng.integers(0, 3, (5, 2, 3))
    want = paddle.nn.functional.gather_tree(paddle.to_tensor(ids), paddle.to_tensor(parents)).numpy()
    np.testing.assert_array_equal(np.asarray(_gather_tree(jnp.asarray(ids), jnp.asarray(parents))), want)


class _GreedyDecoder(nn.decode.Decoder):
    """A decoder that does not track its own finished flags: counts down per batch entry."""

    def initialize(self, inits):
        return inits, inits, inits[:, 0] <= 0

    def step(self, time, inputs, states, **kwargs):
        new = states - 1
        return new, new, new, new[:, 0] <= 0


def test_dynamic_decode_generic_decoder_and_errors(paddle):
    class PaddleCountdown(paddle.nn.decode.Decoder):
        def initialize(self, inits):
            return inits, inits, inits[:, 0] <= 0

        def step(self, time, inputs, states, **kwargs):
            new = states - 1
            return new, new, new, new[:, 0] <= 0

    start = np.array([[1], [3], [2]], "float32")
    for impute in (False, True):
        outs, final, lengths = nn.dynamic_decode(_GreedyDecoder(), jnp.asarray(start),
                                                 impute_finished=impute, return_length=True)
        pd_outs, pd_final, pd_lengths = paddle.nn.dynamic_decode(
            PaddleCountdown(), paddle.to_tensor(start), impute_finished=impute, return_length=True)
        np.testing.assert_array_equal(np.asarray(outs), pd_outs.numpy())
        np.testing.assert_array_equal(np.asarray(final), pd_final.numpy())
        np.testing.assert_array_equal(np.asarray(lengths), pd_lengths.numpy())
    with pytest.raises(ValueError, match="beam_size"):
        nn.BeamSearchDecoder(nn.GRUCell(2, 2), 0, 1, 0)
    with pytest.raises(ValueError, match="max_step_num"):
        nn.dynamic_decode(_GreedyDecoder(), jnp.asarray(start), max_step_num=-1)
