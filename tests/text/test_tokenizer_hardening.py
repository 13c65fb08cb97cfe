"""Tokenizer files and corpora from untrusted sources: typed errors, no panics, bounded memory."""

import json
import os
import subprocess
import sys

import pytest

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


MUTATE = r'''
import json, random, resource, time
from hypothesis import given, settings, strategies as st, HealthCheck
from pdx import text

tok = text.train_bpe(text.bundled_corpus()[:10], vocab_size=300)
base_json = json.loads(tok._backend.to_str())
fragments = st.sampled_from(["a", "a+", "(a+)+", "(a|a)*", "\\s+", "\\p{L}+", "[^\\s]", "(?:x|y)*", "|", "(", ")",
                             "{2,}", "*", "?", "\\", "[", "]", "(?!\\S)", ".*", "(?i:'s)"])
values = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-2, 10**12), st.text(max_size=8)),
                      lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(st.text(max_size=6), c,
                                                                                   max_size=3)), max_leaves=8)
keys = st.sampled_from(["normalizer", "pre_tokenizer", "decoder", "post_processor", "model", "added_tokens",
                        "truncation", "padding", "version"])

@st.composite
def mutated(draw):
    d = json.loads(json.dumps(base_json))
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.integers(0, 3))
        if kind == 0:
            pattern = "".join(draw(st.lists(fragments, min_size=1, max_size=6)))
            d["pre_tokenizer"] = {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated",
                                  "invert": False}
        elif kind == 1:
            d[draw(keys)] = draw(values)
        elif kind == 2 and isinstance(d.get("model"), dict):
            d["model"][draw(st.sampled_from(["type", "vocab", "merges", "unk_token", "dropout"]))] = draw(values)
        else:
            pattern = "".join(draw(st.lists(fragments, min_size=1, max_size=6)))
            d["normalizer"] = {"type": "Replace", "pattern": {"Regex": pattern}, "content": draw(st.text(max_size=3))}
    return d

path = "/tmp/pdx_fuzz_tokenizer_%d.json" % __import__("os").getpid()
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
worst = [0.0]

@settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(mutated(), st.text(alphabet="ab xy'\n", max_size=60))
def fuzz(d, sample):
    with open(path, "w") as f:
        json.dump(d, f)
    start = time.monotonic()
    try:
        t = text.Tokenizer.from_file(path)
        t.encode(sample)
        t.encode_batch([sample, sample[::-1]])
    except text.TokenizerError:
        pass
    worst[0] = max(worst[0], time.monotonic() - start)

fuzz()
grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024
print(f"worst {worst[0]:.2f} s, grown {grown:.0f} MB")
assert worst[0] < 2.0 and grown < 200, (worst[0], grown)
'''


def test_fuzzed_tokenizer_files_give_only_tokenizer_errors():
    env = {**os.environ, "RUST_BACKTRACE": "0"}
    out = subprocess.run([sys.executable, "-c", MUTATE.replace("MAX_EXAMPLES", "40")], capture_output=True,
                         text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-4000:]
    assert "worst" in out.stdout


LONG_LINE = r'''
import json, resource, sys
from pdx import text

tok = text.Tokenizer.from_pretrained(sys.argv[1])
text.tokenize_corpus(iter(["warm up"]), tok, sys.argv[2] + "_warm", num_workers=0)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
made = text.tokenize_corpus(text.iter_documents([sys.argv[3]]), tok, sys.argv[2], num_workers=0)
grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024
print(json.dumps({"grown_mb": grown, "docs": len(made), "tokens": made.num_tokens}))
'''


def test_a_long_line_is_tokenized_in_pieces_with_bounded_memory(tmp_path):
    tok = text.train_bpe(text.bundled_corpus()[:30], vocab_size=500)
    tok.save_pretrained(tmp_path / "tok")
    words = " ".join(text.bundled_corpus()[:40]).split()
    line = " ".join(words[i % len(words)] for i in range(150_000))[: 1 << 20]  # one 1 MiB document
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("\n".join(json.dumps({"text": d}) for d in ["first", line, "last one"]) + "\n")
    out = subprocess.run([sys.executable, "-c", LONG_LINE, str(tmp_path / "tok"), str(tmp_path / "data"),
                          str(corpus)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    stats = json.loads(out.stdout.strip().splitlines()[-1])
    assert stats["docs"] == 3 and stats["grown_mb"] < 200, stats
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
