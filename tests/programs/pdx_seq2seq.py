"""Seq2seq decoding: a GRU encoder, a GRUCell decoder, nn.BeamSearchDecoder and
nn.dynamic_decode with copied weights."""
import json

import numpy as np
import pdx as paddle
import pdx.nn as nn

paddle.set_device("cpu")
VOCAB, HIDDEN, BEAM = 12, 16, 3


class Seq2Seq(nn.Layer):
    def __init__(self):
        super().__init__()
        self.src_embedding = nn.Embedding(VOCAB, HIDDEN)
        self.encoder = nn.GRU(HIDDEN, HIDDEN)
        self.tgt_embedding = nn.Embedding(VOCAB, HIDDEN)
        self.decoder_cell = nn.GRUCell(HIDDEN, HIDDEN)
        self.output_layer = nn.Linear(HIDDEN, VOCAB)

    def forward(self, src):
        _, enc_state = self.encoder(self.src_embedding(src))
        decoder = nn.BeamSearchDecoder(self.decoder_cell, start_token=0, end_token=1, beam_size=BEAM,
                                       embedding_fn=self.tgt_embedding, output_fn=self.output_layer)
        outputs, final_states, lengths = nn.dynamic_decode(decoder, inits=enc_state[-1], max_step_num=7,
                                                           return_length=True)
        return outputs, final_states, lengths


model = Seq2Seq()
rng = np.random.RandomState(9)
state = model.state_dict()
for name, param in model.named_parameters():
    param.set_value((rng.randn(*param.shape) * 0.5).astype("float32"))
model.eval()
src = paddle.to_tensor(rng.randint(2, VOCAB, size=(4, 6)).astype("int64"))
ids, final_states, lengths = model(src)
print(json.dumps({
    "param_names": sorted(state),
    "ids_shape": list(ids.shape),
    "ids": ids.numpy().tolist(),
    "lengths": lengths.numpy().tolist(),
    "log_probs": final_states.log_probs.numpy().tolist(),
}))
