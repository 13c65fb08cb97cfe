"""Tokenizer files and corpora from untrusted sources: typed errors, no panics, bounded memory."""

import json
import os
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pdx import text


GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
          r"\s*[\r\n]+|\s+(?!\S)|\s+")


@pytest.fixture(scope="module")
def tok_json():
    tok = text.train_bpe(text.bundled_corpus()[:20], vocab_size=400)
    return json.loads(tok._backend.to_str())


def _split(pattern):
    return {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}


def test_backtracking_regexes_are_refused_at_load_and_panics_become_tokenizer_errors(tok_json, tmp_path):
    path = tmp_path / "tokenizer.json"
    for pattern in ("(a+)+$", "(a|a)*b", "(x+x+)+y", "(?:\\s*x)*", "([a-z]+)*!", "a" * 5000):
        path.write_text(json.dumps({**tok_json, "pre_tokenizer": _split(pattern)}))
        with pytest.raises(text.TokenizerError, match="regex at pre_tokenizer"):
            text.Tokenizer.from_file(path)
        path.write_text(json.dumps({**tok_json, "normalizer": {"type": "Replace", "pattern": {"Regex": pattern},
                                                               "content": " "}}))
        with pytest.raises(text.TokenizerError, match="regex at normalizer"):
            text.Tokenizer.from_file(path)
    for pattern in (GPT2, LLAMA3, "(?:ab|cd)+", "(\\r?\\n)+"):  # what real tokenizers ship loads and encodes
        path.write_text(json.dumps({**tok_json, "pre_tokenizer": _split(pattern)}))
        tok = text.Tokenizer.from_file(path)
        assert tok.decode(tok.encode("it's 42 apples\n\n ok", add_special_tokens=False)) == "it's 42 apples\n\n ok"
    # a panic of the Rust library (Oniguruma's retry limit) reaches the caller as TokenizerError, not BaseException
    from tokenizers import Tokenizer as HF

    raw = HF.from_str(json.dumps({**tok_json, "pre_tokenizer": _split("(a+)+$")}))
    tok = text.Tokenizer(raw, "tokenizers")
    with pytest.raises(text.TokenizerError, match="panicked"):
        tok.encode("a" * 40 + "b")
    with pytest.raises(text.TokenizerError, match="panicked"):
        tok.encode_batch(["a" * 40 + "b"])
    path.write_text('{"a": ' * 100000)
    with pytest.raises(text.TokenizerError, match="nests"):
        text.Tokenizer.from_file(path)


_FRAGMENTS = st.sampled_from(["a", "a+", "(a+)+", "(a|a)*", "\\s+", "\\p{L}+", "[^\\s]", "(?:x|y)*", "|", "(", ")",
                             "{2,}", "*", "?", "\\", "[", "]", "(?!\\S)", ".*", "(?i:'s)"])
_VALUES = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-2, 10**12), st.text(max_size=8)),
                      lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(st.text(max_size=6), c,
                                                                                   max_size=3)), max_leaves=8)
_KEYS = st.sampled_from(["normalizer", "pre_tokenizer", "decoder", "post_processor", "model", "added_tokens",
                        "truncation", "padding", "version"])

@st.composite
def _mutated(draw, base):
    d = json.loads(json.dumps(base))
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.integers(0, 3))
        if kind == 0:
            pattern = "".join(draw(st.lists(_FRAGMENTS, min_size=1, max_size=6)))
            d["pre_tokenizer"] = {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated",
                                  "invert": False}
        elif kind == 1:
            d[draw(_KEYS)] = draw(_VALUES)
        elif kind == 2 and isinstance(d.get("model"), dict):
            d["model"][draw(st.sampled_from(["type", "vocab", "merges", "unk_token", "dropout"]))] = draw(_VALUES)
        else:
            pattern = "".join(draw(st.lists(_FRAGMENTS, min_size=1, max_size=6)))
            d["normalizer"] = {"type": "Replace", "pattern": {"Regex": pattern}, "content": draw(st.text(max_size=3))}
    return d


def test_fuzzed_tokenizer_files_give_only_tokenizer_errors(tok_json, tmp_path, peak_rss):
    path = tmp_path / "tokenizer.json"
    worst = [0.0]

    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(_mutated(tok_json), st.text(alphabet="ab xy'\n", max_size=60))
    def fuzz(d, sample):
        path.write_text(json.dumps(d))
        start = time.monotonic()
        try:
            t = text.Tokenizer.from_file(path)
            t.encode(sample)
            t.encode_batch([sample, sample[::-1]])
        except text.TokenizerError:
            pass
        worst[0] = max(worst[0], time.monotonic() - start)

    with peak_rss() as rss:
        fuzz()
    assert worst[0] < 2.0 and rss.grown_mb < 200, (worst[0], rss.grown_mb)


def test_a_long_line_is_tokenized_in_pieces_with_bounded_memory(tmp_path, peak_rss):
    tok = text.train_bpe(text.bundled_corpus()[:30], vocab_size=500)
    tok.save_pretrained(tmp_path / "tok")
    words = " ".join(text.bundled_corpus()[:40]).split()
    line = " ".join(words[i % len(words)] for i in range(150_000))[: 1 << 20]  # one 1 MiB document
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("\n".join(json.dumps({"text": d}) for d in ["first", line, "last one"]) + "\n")
    text.tokenize_corpus(iter(["warm up"]), tok, tmp_path / "warm", num_workers=0)
    with peak_rss() as rss:
        made = text.tokenize_corpus(text.iter_documents([corpus]), tok, tmp_path / "data", num_workers=0)
    assert len(made) == 3 and rss.grown_mb < 200, rss.grown_mb
    made = text.TokenFile(tmp_path / "data")
    # byte-level BPE round-trips exactly, so the pieces decode back to the whole line
    ids = made[1].tolist()
    assert ids[0] == tok.bos_token_id and ids[-1] == tok.eos_token_id
    assert tok.decode(ids[1:-1]) == line
    assert made[0].tolist() == tok.encode("first") + [tok.eos_token_id]
    # cut just before whitespace, so the ids equal a one-shot encode of a shorter text cut the same way
    part = line[:60_000]
    direct = tok.encode(part)
    pieced = text.tokenize_corpus([part], tok, tmp_path / "p", num_workers=0, piece_chars=1 << 14)
    assert pieced[0].tolist() == direct + [tok.eos_token_id]
    # a line over the cap is refused with its line number before it is read whole
    with pytest.raises(text.TokenizerError, match="line 2: over max_document_bytes=1024"):
        list(text.iter_documents([corpus], max_document_bytes=1024))
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(text.TokenizerError, match="FIFO"):
        list(text.iter_documents([fifo]))
