"""pdx.models.bert against transformers (BERT, ERNIE, WordPiece) and a paddle.nn-built PaddleNLP-layout BERT."""

import jax.numpy as jnp
import numpy as np
import pytest

import pdx
import pdx.models.bert as bert

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

HF_CONFIG = dict(vocab_size=120, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                 max_position_embeddings=64, type_vocab_size=2, hidden_dropout_prob=0.0,
                 attention_probs_dropout_prob=0.0, pad_token_id=0)


def _batch():
    rng = np.random.RandomState(0)
    ids = rng.randint(5, 120, size=(3, 11)).astype(np.int32)
    ids[:, 0] = 2
    ids[1, 7:] = 0          # padded rows
    ids[2, 4:] = 0
    types = np.zeros_like(ids)
    types[:, 5:] = 1
    mask = (ids != 0).astype(np.int32)
    return ids, types, mask


def _hf(model, ids, types, mask, **extra):
    with torch.no_grad():
        t = lambda a: torch.tensor(a, dtype=torch.long)  # noqa: E731
        return model(input_ids=t(ids), token_type_ids=t(types), attention_mask=t(mask),
                     **{k: t(v) for k, v in extra.items()})


def _close(a, b, tol=1e-4):
    np.testing.assert_allclose(np.asarray(a), b.detach().numpy() if hasattr(b, "detach") else b, atol=tol, rtol=tol)


def test_public_names():
    for name in bert.__all__:
        assert getattr(bert, name) is not None


def test_hf_bert_import_matches_transformers(tmp_path):
    """Random-init transformers models saved as safetensors load through pdx.models.from_pretrained."""
    ids, types, mask = _batch()
    valid = mask.astype(bool)

    torch.manual_seed(0)
    hf = transformers.BertModel(transformers.BertConfig(**HF_CONFIG)).eval()
    hf.save_pretrained(tmp_path / "base", safe_serialization=True)
    model = pdx.models.from_pretrained(tmp_path / "base")
    assert type(model).__name__ == "BertModel"
    model.eval()
    ref = _hf(hf, ids, types, mask)
    seq, pooled = model(jnp.asarray(ids), jnp.asarray(types), attention_mask=jnp.asarray(mask))
    _close(seq, ref.last_hidden_state)
    _close(pooled, ref.pooler_output)
    # Paddle's rule: with no mask, keys equal to pad_token_id are masked: same outputs on real tokens
    seq_default, pooled_default = model(jnp.asarray(ids), jnp.asarray(types))
    np.testing.assert_allclose(np.asarray(seq_default)[valid], ref.last_hidden_state.numpy()[valid], atol=1e-4)
    _close(pooled_default, ref.pooler_output)

    for arch, extra in (("BertForSequenceClassification", dict(num_labels=3)),
                        ("BertForTokenClassification", dict(num_labels=5)),
                        ("BertForQuestionAnswering", {})):
        torch.manual_seed(1)
        head = getattr(transformers, arch)(transformers.BertConfig(**HF_CONFIG, **extra)).eval()
        head.save_pretrained(tmp_path / arch, safe_serialization=True)
        model = bert.load_hf_bert(tmp_path / arch)
        assert type(model).__name__ == arch
        ref = _hf(head, ids, types, mask)
        out = model(jnp.asarray(ids), jnp.asarray(types), attention_mask=jnp.asarray(mask))
        if arch == "BertForQuestionAnswering":
            _close(out[0], ref.start_logits)
            _close(out[1], ref.end_logits)
        elif arch == "BertForTokenClassification":
            np.testing.assert_allclose(np.asarray(out)[valid], ref.logits.numpy()[valid], atol=1e-4)
        else:
            _close(out, ref.logits)
        # and through the zoo's foreign reader
        if arch == "BertForSequenceClassification":
            zoo = pdx.models.from_pretrained(tmp_path / arch).eval()
            _close(zoo(jnp.asarray(ids), jnp.asarray(types), attention_mask=jnp.asarray(mask)), ref.logits)

    # a pretraining checkpoint: cls.* heads dropped, the encoder extracted
    torch.manual_seed(2)
    pre = transformers.BertForMaskedLM(transformers.BertConfig(**HF_CONFIG)).eval()
    names = bert.hf_to_pdx({k: v for k, v in pre.state_dict().items()})
    assert not any(k.startswith(("cls.", "bert.")) for k in names), sorted(names)[:4]
    assert names["encoder.layers.1.linear1.weight"].shape == (64, 128)   # [in, out]


def test_hf_ernie_with_task_ids_matches_transformers(tmp_path):
    ids, types, mask = _batch()
    task = np.ones_like(ids)
    torch.manual_seed(3)
    cfg = transformers.ErnieConfig(**HF_CONFIG, use_task_id=True, task_type_vocab_size=3)
    hf = transformers.ErnieForSequenceClassification(cfg).eval()
    hf.save_pretrained(tmp_path, safe_serialization=True)
    model = pdx.models.from_pretrained(tmp_path).eval()
    assert type(model).__name__ == "ErnieForSequenceClassification"
    assert "ernie.embeddings.task_type_embeddings.weight" in model.state_dict()
    ref = _hf(hf, ids, types, mask, task_type_ids=task)
    out = model(jnp.asarray(ids), jnp.asarray(types), attention_mask=jnp.asarray(mask),
                task_type_ids=jnp.asarray(task))
    _close(out, ref.logits)


def test_paddle_layout_state_dict_loads_and_matches_paddle(tmp_path):
    """A BERT built from paddle.nn with PaddleNLP's names: its .pdparams loads by name, outputs agree."""
    paddle = pytest.importorskip("paddle")
    cfg = bert.BertConfig(vocab_size=120, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                          intermediate_size=64, max_position_embeddings=32, hidden_dropout_prob=0.0,
                          attention_probs_dropout_prob=0.0)
    paddle.seed(0)

    class Embeddings(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.word_embeddings = paddle.nn.Embedding(120, 32)
            self.position_embeddings = paddle.nn.Embedding(32, 32)
            self.token_type_embeddings = paddle.nn.Embedding(2, 32)
            self.layer_norm = paddle.nn.LayerNorm(32, epsilon=1e-12)

        def forward(self, ids, types):
            pos = paddle.arange(ids.shape[1]).unsqueeze(0)
            x = self.word_embeddings(ids) + self.position_embeddings(pos) + self.token_type_embeddings(types)
            return self.layer_norm(x)

    class PaddleBert(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.embeddings = Embeddings()
            layer = paddle.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, activation="gelu", attn_dropout=0.0,
                                                      act_dropout=0, layer_norm_eps=1e-12)
            self.encoder = paddle.nn.TransformerEncoder(layer, 2)
            self.pooler = paddle.nn.Layer()
            self.pooler.dense = paddle.nn.Linear(32, 32)

        def forward(self, ids, types):
            mask = paddle.unsqueeze((ids == 0).astype("float32") * -1e4, axis=[1, 2])
            x = self.encoder(self.embeddings(ids, types), mask)
            return x, paddle.tanh(self.pooler.dense(x[:, 0]))

    ref_model = PaddleBert()
    ref_model.eval()
    for p in ref_model.parameters():  # non-trivial LayerNorm parameters too
        p.set_value(paddle.randn(p.shape) * 0.3 + (1.0 if p.name.startswith("layer_norm") else 0.0))
    paddle.save(ref_model.state_dict(), str(tmp_path / "model.pdparams"))
    ids, types, _ = _batch()
    ids = ids % 120
    ref_seq, ref_pooled = ref_model(paddle.to_tensor(ids.astype(np.int64)), paddle.to_tensor(types.astype(np.int64)))

    model = bert.BertModel(cfg)
    state = {k: np.asarray(v) for k, v in pdx.checkpoint.load_pdparams(str(tmp_path / "model.pdparams")).items()}
    missing, unexpected = model.set_state_dict(state)
    assert not missing and not unexpected, (missing, unexpected)
    model.eval()
    seq, pooled = model(jnp.asarray(ids), jnp.asarray(types))
    np.testing.assert_allclose(np.asarray(seq), ref_seq.numpy(), atol=2e-4, rtol=2e-4)
    np.testing.assert_allclose(np.asarray(pooled), ref_pooled.numpy(), atol=2e-4, rtol=2e-4)


def test_wordpiece_matches_transformers_tokenizers(tmp_path):
    from pydoc_data.topics import topics

    texts = [line for v in list(topics.values())[:15] for line in v.split("\n") if line.strip()]
    tok = bert.train_wordpiece(texts, vocab_size=600)
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(tok.id_to_token(i) for i in range(tok.vocab_size)) + "\n", encoding="utf-8")
    slow = transformers.BertTokenizer(str(vocab), do_lower_case=True)   # pure-Python reference
    fast = transformers.BertTokenizerFast(str(vocab), do_lower_case=True)
    a = ["Hello World, the assert statement is here!", "x", "Déjà vu: übermäßig 3.14 café", "中文 text"]
    b = ["short one", "a much longer second segment with many many words in it", "yes", "no"]
    for max_length in (6, 9, 40):
        for pair in (None, b):
            for padding in ("longest", "max_length"):
                mine = bert.encode_inputs(tok, a, pair, max_length=max_length, padding=padding)
                for ref in (slow, fast):
                    theirs = ref(a, pair, max_length=max_length, padding=padding, truncation=True, return_tensors="np")
                    for key, value in mine.items():
                        np.testing.assert_array_equal(value, theirs[key], err_msg=f"{key} {max_length} {padding}")
    again = bert.wordpiece_from_vocab(vocab)
    assert again.encode("Hello assert world") == tok.encode("Hello assert world") == slow.encode("Hello assert world")
    fixed = bert.train_wordpiece(texts, vocab_size=600, fixed_length=8)
    assert len(fixed.encode("one")) == len(fixed.encode("a b c d e f g h i j k l")) == 8
    assert fixed.encode("a b c d e f g h i j k l")[-1] == fixed.token_to_id("[SEP]")
    with pytest.raises(ValueError, match="max_length"):
        bert.encode_inputs(tok, "x", max_length=2)
    with pytest.raises(ValueError, match="padding"):
        bert.encode_inputs(tok, "x", padding="right")


def test_zoo_presets_roundtrip_and_errors(tmp_path):
    rows = {r["name"]: r for r in pdx.models.list("bert") + pdx.models.list("ernie")}
    assert {"bert-tiny", "bert-base-uncased", "ernie-3.0-tiny", "ernie-3.0-medium-zh"} <= set(rows)
    assert rows["bert-tiny"]["config"]["num_hidden_layers"] == 2 and rows["bert-tiny"]["config"]["hidden_size"] == 128
    assert 109_000_000 < rows["bert-base-uncased"]["params"] < 110_000_000       # BERT-Base: 109.5M with pooler
    assert rows["ernie-3.0-medium-zh"]["config"]["use_task_id"] is True

    model = pdx.models.create("bert-tiny", num_classes=3, vocab_size=50, max_position_embeddings=16).eval()
    ids = jnp.asarray(np.random.RandomState(0).randint(1, 50, (2, 6)), jnp.int32)
    logits = np.asarray(model(ids))
    pdx.models.save_pretrained(model, tmp_path / "tiny", name="bert-tiny", num_classes=3, vocab_size=50,
                         max_position_embeddings=16)
    back = pdx.models.from_pretrained(tmp_path / "tiny").eval()
    np.testing.assert_array_equal(np.asarray(back(ids)), logits)

    with pytest.raises(ValueError, match="hidden_size=30 must be divisible by num_attention_heads=4"):
        bert.BertConfig(hidden_size=30, num_attention_heads=4)
    with pytest.raises(ValueError, match="hidden_act"):
        bert.BertConfig(hidden_act="swish")
    with pytest.raises(ValueError, match="unknown preset"):
        bert.BertConfig.from_preset("ernie-3.0-tiny")
    with pytest.raises(ValueError, match="input_ids must be integer ids"):
        model(jnp.ones((2, 3)))
    with pytest.raises(ValueError, match="max_position_embeddings is 16"):
        model(jnp.ones((1, 20), jnp.int32))
    with pytest.raises(ValueError, match="num_classes"):
        bert.BertForSequenceClassification("bert-tiny", num_classes=0)
