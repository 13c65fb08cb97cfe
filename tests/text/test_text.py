"""pdx.text against the libraries themselves: tokenizers, sentencepiece, transformers' chat templates.

A byte-level BPE trained on Python's bundled docs round-trips any text
exactly; a tokenizer.json made with the tokenizers library and a
sentencepiece model give the libraries' own ids through pdx.text; a saved
tokenizer directory loads in transformers with the same ids and the same
rendered chat; packing in memory equals packing read from a memory-mapped
TokenFile, and the DataLoader over it resumes where it stopped.
"""

import io
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import pdx
from pdx import text

CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
SAMPLES = ["Hello, world!", "  leading spaces and\ttabs\n\nnewlines  ", "ünïcödé — 数学 😀 emoji",
           "def f(x):\n    return x ** 2  # code", "", "a" * 300]


@pytest.fixture(scope="module")
def corpus():
    docs = text.bundled_corpus()
    return docs[: len(docs) // 2], docs[len(docs) // 2:]


@pytest.fixture(scope="module")
def bpe(corpus):
    return text.train_bpe(corpus[0], vocab_size=1000, chat_template=CHATML,
                          special_tokens=("<unk>", "<s>", "</s>", "<pad>", "<|im_start|>", "<|im_end|>"))


def test_bpe_round_trips_exactly(bpe, corpus):
    assert bpe.vocab_size == 1000 and (bpe.bos_token, bpe.eos_token) == ("<s>", "</s>")
    for doc in corpus[1][:40] + SAMPLES:  # held-out documents and awkward strings
        ids = bpe.encode(doc)
        assert ids[0] == bpe.bos_token_id
        assert bpe.decode(ids, skip_special_tokens=True) == doc
        assert bpe.decode(bpe.encode(doc, add_special_tokens=False)) == doc
    held_out = "\n\n".join(corpus[1][:20])
    assert len(bpe.encode(held_out)) < len(held_out.encode("utf-8")) / 2.5  # it learned merges


def test_tokenizers_file_and_sentencepiece_give_the_libraries_ids(tmp_path, corpus):
    import sentencepiece as spm
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers import decoders, models, normalizers, pre_tokenizers, trainers

    # a WordPiece tokenizer.json made with the tokenizers library itself
    wp = HFTokenizer(models.WordPiece(unk_token="[UNK]"))
    wp.normalizer = normalizers.BertNormalizer(lowercase=True)
    wp.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    wp.decoder = decoders.WordPiece()
    wp.train_from_iterator(corpus[0], trainers.WordPieceTrainer(vocab_size=800, special_tokens=["[UNK]", "[CLS]"],
                                                                show_progress=False))
    wp.save(str(tmp_path / "wordpiece.json"))
    ours = text.Tokenizer.from_file(tmp_path / "wordpiece.json")
    theirs = HFTokenizer.from_file(str(tmp_path / "wordpiece.json"))
    # a sentencepiece unigram model trained by sentencepiece
    proto = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(corpus[0]), model_writer=proto, vocab_size=600,
                                   model_type="unigram", unk_id=0, bos_id=1, eos_id=2, pad_id=3, minloglevel=2)
    (tmp_path / "sp.model").write_bytes(proto.getvalue())
    sp_ours = text.Tokenizer.from_file(tmp_path / "sp.model")
    sp_theirs = spm.SentencePieceProcessor(model_file=str(tmp_path / "sp.model"))
    assert sp_ours.bos_token_id == 1 and sp_ours.eos_token_id == 2 and sp_ours.vocab_size == 600
    for doc in corpus[1][:25] + SAMPLES:
        assert ours.encode(doc) == theirs.encode(doc).ids
        assert ours.decode(ours.encode(doc), skip_special_tokens=True) == theirs.decode(theirs.encode(doc).ids)
        assert sp_ours.encode(doc, add_special_tokens=False) == sp_theirs.encode(doc)
        assert sp_ours.encode(doc) == [1] + sp_theirs.encode(doc)
        assert sp_ours.decode(sp_ours.encode(doc), skip_special_tokens=True) == sp_theirs.decode(sp_theirs.encode(doc))


def test_saved_directory_loads_in_transformers_with_same_ids_and_chat(bpe, tmp_path, corpus):
    from transformers import AutoTokenizer

    bpe.save_pretrained(tmp_path / "tok")
    again = text.Tokenizer.from_pretrained(tmp_path / "tok")
    hf = AutoTokenizer.from_pretrained(str(tmp_path / "tok"))
    chat = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "What is 2+3?"},
            {"role": "assistant", "content": "5"}, {"role": "user", "content": "And 4+4?"},
            {"role": "assistant", "content": "8"}]
    for doc in corpus[1][:10] + SAMPLES:
        assert again.encode(doc) == bpe.encode(doc) == hf(doc)["input_ids"]
    rendered = again.apply_chat_template(chat, tokenize=False)
    assert rendered == hf.apply_chat_template(chat, tokenize=False)
    prompt = again.apply_chat_template(chat[:2], add_generation_prompt=True, tokenize=False)
    assert prompt == hf.apply_chat_template(chat[:2], add_generation_prompt=True, tokenize=False)
    assert prompt.endswith("<|im_start|>assistant\n")

    # the loss mask covers exactly the assistant turns (their content and the end-of-turn token)
    ids, mask = again.encode_chat(chat)
    answer = again.decode([i for i, m in zip(ids, mask) if m])
    assert answer == "5<|im_end|>\n8<|im_end|>\n"

    # templates run sandboxed: a template from a file cannot reach Python objects
    with pytest.raises(Exception, match="unsafe|not safely|access"):
        again.apply_chat_template(chat, chat_template="{{ messages.__class__.__mro__[1].__subclasses__() }}")
    with pytest.raises(text.TokenizerError, match="no chat_template"):
        text.train_bpe(["ab"] * 10, vocab_size=270).apply_chat_template(chat)


def test_packing_in_memory_equals_the_memory_mapped_token_file(bpe, corpus, tmp_path):
    docs = [bpe.encode(d) for d in corpus[1][:30]]
    seq = 64
    tokens, segments, positions = text.pack_documents(docs, seq, eos_id=bpe.eos_token_id)
    stream = np.concatenate([np.asarray(d + [bpe.eos_token_id]) for d in docs])
    np.testing.assert_array_equal(tokens.reshape(-1)[: len(stream)], stream)  # nothing lost or reordered
    # within a row: a segment is a contiguous run, positions count from 0 in each piece
    for row_s, row_p in zip(segments, positions):
        live = row_s[row_s > 0]
        assert live[0] == 1 and np.all(np.diff(live) >= 0) and np.all(np.diff(live) <= 1)
        starts = np.flatnonzero(np.diff(np.concatenate([[0], row_s])) != 0)
        assert np.all(row_p[starts[row_s[starts] > 0]] == 0)

    # the same documents through worker processes into a TokenFile, read back packed on demand
    texts = corpus[1][:30]
    made = text.tokenize_corpus(texts, bpe, tmp_path / "corpus", num_workers=2, chunk_size=8)
    assert len(made) == 30 and made.dtype == np.uint16 and made.num_tokens == len(stream)
    data = text.PackedDataset(text.TokenFile(tmp_path / "corpus"), seq)
    assert len(data) == len(tokens)
    for i in range(len(data)):
        row = data[i]
        np.testing.assert_array_equal(row["tokens"], tokens[i])
        np.testing.assert_array_equal(row["segment_ids"], segments[i])
        np.testing.assert_array_equal(row["positions"], positions[i])
        np.testing.assert_array_equal(row["labels"], text.lm_targets(tokens[i:i + 1], segments[i:i + 1])[0])

    # a shuffled DataLoader over it resumes exactly where it stopped
    loader = pdx.io.DataLoader(data, batch_size=4, shuffle=True, seed=3)
    it = iter(loader)
    first = [np.asarray(next(it)["tokens"]) for _ in range(2)]
    state = loader.state_dict()
    rest = [np.asarray(b["tokens"]) for b in it]
    again = pdx.io.DataLoader(data, batch_size=4, shuffle=True, seed=3)
    again.set_state_dict(state)
    np.testing.assert_array_equal(np.concatenate([np.asarray(b["tokens"]) for b in again]), np.concatenate(rest))
    assert len(first) == 2

    # a truncated file is refused with the fix, not misread
    with open(tmp_path / "corpus.bin", "r+b") as f:
        f.truncate(10)
    with pytest.raises(text.TokenizerError, match="truncated"):
        text.TokenFile(tmp_path / "corpus")


def test_cli_trains_and_tokenizes(tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("\n".join(json.dumps({"text": d}) for d in text.bundled_corpus()[:40]))
    run = lambda *a: subprocess.run([sys.executable, "-m", "pdx.cli", "text", *a], capture_output=True,  # noqa: E731
                                    text=True, timeout=300)
    out = run("train-bpe", str(corpus), "--vocab-size", "600", "--out", str(tmp_path / "tok"))
    assert out.returncode == 0, out.stderr
    assert os.path.isfile(tmp_path / "tok" / "tokenizer.json")
    out = run("tokenize", str(corpus), "--tokenizer", str(tmp_path / "tok"), "--out", str(tmp_path / "data"))
    assert out.returncode == 0, out.stderr
    tok = text.Tokenizer.from_pretrained(tmp_path / "tok")
    made = text.TokenFile(tmp_path / "data")
    assert len(made) == 40 and made[3].tolist() == tok.encode(text.bundled_corpus()[3]) + [tok.eos_token_id]
    (tmp_path / "bad.jsonl").write_text('{"txt": "x"}\n')
    out = run("train-bpe", str(tmp_path / "bad.jsonl"), "--out", str(tmp_path / "t2"))
    assert out.returncode == 2 and "line 1: expected an object with a string 'text' field" in out.stderr


def test_perplexity_and_multiple_choice_against_transformers(bpe, corpus, tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from pdx.models.llama import LlamaConfig, LlamaForCausalLM, save_hf_pretrained

    model = LlamaForCausalLM(LlamaConfig.from_preset("tiny", vocab_size=bpe.vocab_size, max_position_embeddings=128),
                             rngs=0)
    save_hf_pretrained(model, tmp_path / "hf")
    hf = transformers.AutoModelForCausalLM.from_pretrained(str(tmp_path / "hf"), dtype=torch.float32).eval()

    # perplexity over packed rows = exp(mean NLL) of each document run alone in transformers
    docs = [bpe.encode(d)[:40] for d in corpus[1][:6]]
    made = text.tokenize_corpus(corpus[1][:6], bpe, tmp_path / "val", num_workers=0)
    rows = text.PackedDataset(made, 32)
    got = text.perplexity(model, rows, batch_size=4)
    nll, count = 0.0, 0
    for i in range(len(rows)):
        r = rows[i]
        for s in range(1, r["segment_ids"].max() + 1):
            cols = np.flatnonzero(r["segment_ids"] == s)
            with torch.no_grad():
                logits = hf(torch.tensor(r["tokens"][cols][None].astype(np.int64))).logits[0].double()
            logp = torch.log_softmax(logits, -1).numpy()
            lab = r["labels"][cols]
            keep = lab >= 0
            nll -= logp[np.flatnonzero(keep), lab[keep]].sum()
            count += int(keep.sum())
    assert got["tokens"] == count and len(docs) == 6
    np.testing.assert_allclose(got["loss"], nll / count, rtol=1e-5)

    # a multiple-choice task: the model's picks equal transformers' log-likelihood argmax
    rng = np.random.default_rng(0)
    words = corpus[1][7].split()[:60]
    task = [{"context": " ".join(words[i:i + 5]), "choices": [" " + w for w in rng.choice(words, 3, replace=False)],
             "answer": int(rng.integers(0, 3))} for i in range(0, 40, 4)]
    path = tmp_path / "task.jsonl"
    path.write_text("\n".join(json.dumps(t) for t in task))
    result = text.multiple_choice(model, bpe, path, batch_size=8)
    right = 0
    for t in task:
        ctx = bpe.encode(t["context"])
        scores = []
        for c in t["choices"]:
            seq = ctx + bpe.encode(c, add_special_tokens=False)
            with torch.no_grad():
                logp = torch.log_softmax(hf(torch.tensor([seq])).logits[0].double(), -1).numpy()
            scores.append(sum(logp[p - 1, seq[p]] for p in range(len(ctx), len(seq))))
        right += int(np.argmax(scores)) == t["answer"]
    assert result["n"] == len(task) and result["acc"] == right / len(task)
    (tmp_path / "bad.jsonl").write_text('{"context": "a", "choices": ["b"], "answer": 0}\n')
    with pytest.raises(text.TokenizerError, match="line 1: expected"):
        text.load_choice_task(tmp_path / "bad.jsonl")


def test_viterbi_decode_equals_paddle(paddle):
    rng = np.random.default_rng(0)
    for _ in range(12):
        b, t, n = int(rng.integers(1, 5)), int(rng.integers(1, 7)), int(rng.integers(2, 6))
        potentials = rng.standard_normal((b, t, n)).astype(np.float32)
        transitions = rng.standard_normal((n, n)).astype(np.float32)
        lengths = rng.integers(1, t + 1, b).astype(np.int64)
        for bos in (True, False):
            want_s, want_p = paddle.text.viterbi_decode(paddle.to_tensor(potentials), paddle.to_tensor(transitions),
                                                        paddle.to_tensor(lengths), bos)
            got_s, got_p = text.ViterbiDecoder(transitions, include_bos_eos_tag=bos)(potentials, lengths)
            np.testing.assert_allclose(np.asarray(got_s), want_s.numpy(), rtol=1e-5, atol=1e-5)
            np.testing.assert_array_equal(np.asarray(got_p), want_p.numpy())
    with pytest.raises(ValueError, match=r"need potentials \[B, T, N\]"):
        text.viterbi_decode(np.zeros((2, 3)), np.zeros((3, 3)), np.ones(2))
