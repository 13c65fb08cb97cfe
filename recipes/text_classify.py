"""Fine-tune a small BERT to classify sentences by topic, export it, and serve it with raw strings in.

The data ships with Python: the sentences of `pydoc_data.topics` (the text
of `help("topic")`) from six topics (special method names, compound
statements, the type hierarchy, the debugger, string methods, format
strings), each sentence labelled by its topic; sentences found in two topics
are dropped. A stratified split holds out `--test-fraction` of them. A
WordPiece vocabulary is trained on the training split only
(`pdx.models.bert.train_wordpiece`), a bert-tiny-shaped encoder (2 layers,
width 128) is trained from scratch with AdamW, and the held-out accuracy is
printed beside the majority-class baseline.

The classifier is exported (`pdx.export`, input: token ids (batch, length);
padding is masked from the pad id inside the model, as PaddleNLP does), its
tokenizer saved with fixed-length padding, and `pdx serve ARTIFACT
--tokenizer TOKENIZER` answers `{"inputs": [["a sentence", ...]]}` with
logits: tokenization runs on the server.

    python recipes/text_classify.py                 # ~3 minutes on a busy 2-core CPU
    python recipes/text_classify.py --epochs 3 --serve false   # a quick run
"""

from __future__ import annotations

import collections
import dataclasses
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

import pdx
import pdx.nn.functional as F
from pdx.jit import InputSpec
from pdx.models.bert import BertConfig, BertForSequenceClassification, train_wordpiece

TOPICS = ("specialnames", "compound", "types", "debugger", "string-methods", "formatstrings")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclasses.dataclass(frozen=True)
class TextClassifyConfig:
    preset: str = "bert-tiny"        # BertConfig preset of the encoder (vocab and positions come from the data)
    vocab_size: int = 2000           # WordPiece vocabulary trained on the training split
    max_length: int = 48             # tokens per sentence, [CLS] and [SEP] included (longer ones are cut)
    min_words: int = 5               # shorter sentences are dropped
    test_fraction: float = 0.2       # held out, stratified by topic
    epochs: int = 10
    batch_size: int = 32
    learning_rate: float = 1e-3
    weight_decay: float = 0.01
    dropout: float = 0.2             # hidden and attention dropout while training
    seed: int = 0
    serve: bool = True               # export, start `pdx serve --tokenizer` and classify strings over HTTP
    workdir: str = ""                # where the artifact and tokenizer go (default: a temporary directory)


def topic_sentences(min_words: int = 5) -> tuple[list[str], np.ndarray]:
    """(sentences, labels): every sentence of the chosen pydoc topics, labelled by topic index."""
    from pydoc_data.topics import topics

    per_topic = {}
    for topic in TOPICS:
        text = " ".join(topics[topic].split())
        per_topic[topic] = sorted({s for s in _SENTENCE_END.split(text) if len(s.split()) >= min_words})
    counts = collections.Counter(s for sents in per_topic.values() for s in sents)
    texts, labels = [], []
    for label, topic in enumerate(TOPICS):
        for s in per_topic[topic]:
            if counts[s] == 1:
                texts.append(s)
                labels.append(label)
    return texts, np.asarray(labels, np.int32)


def split(labels: np.ndarray, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Stratified (train indices, test indices)."""
    rng = np.random.RandomState(seed)
    train, test = [], []
    for label in np.unique(labels):
        idx = rng.permutation(np.flatnonzero(labels == label))
        cut = max(1, int(round(len(idx) * fraction)))
        test.extend(idx[:cut])
        train.extend(idx[cut:])
    return rng.permutation(np.asarray(train)), np.sort(np.asarray(test))


def train(model, x, y, cfg: TextClassifyConfig):
    opt = pdx.optimizer.AdamW(learning_rate=cfg.learning_rate, parameters=model.parameters(),
                              weight_decay=cfg.weight_decay)

    @pdx.jit
    def step(model, opt, xb, yb):
        loss, grads = pdx.value_and_grad(lambda m, a, b: F.cross_entropy(m(a), b))(model, xb, yb)
        opt.step(grads)
        return loss

    rng = np.random.RandomState(cfg.seed)
    model.train()
    losses = []
    for _ in range(cfg.epochs):
        order = rng.permutation(len(x))
        epoch = [step(model, opt, x[order[i:i + cfg.batch_size]], y[order[i:i + cfg.batch_size]])
                 for i in range(0, len(x) - cfg.batch_size + 1, cfg.batch_size)]
        losses.append(float(np.mean([float(v) for v in epoch])))
    return model.eval(), losses


def predict(model, x, batch: int = 128) -> np.ndarray:
    run = pdx.jit(lambda m, a: m(a))
    return np.concatenate([np.asarray(run(model, x[i:i + batch])) for i in range(0, len(x), batch)])


def start_server(artifact: str, tokenizer_dir: str, *, timeout_s: float = 120.0):
    """`pdx serve ARTIFACT --tokenizer DIR` in a subprocess on a free loopback port -> (process, url)."""
    cmd = [sys.executable, "-m", "pdx.cli", "serve", artifact, "--tokenizer", tokenizer_dir, "--port", "0",
           "--host", "127.0.0.1", "--max-batch-size", "8", "--log-level", "warning"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"))
    deadline = time.monotonic() + timeout_s
    lines = []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        match = re.search(r"listening on (http://\S+)", line)
        if match:
            return proc, match.group(1)
    stop_server(proc)
    raise RuntimeError("pdx serve did not start:\n" + "".join(lines[-20:]))


def stop_server(proc) -> int:
    """SIGTERM, then wait (pdx serve drains and exits 0)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def serve_and_classify(artifact: str, tokenizer_dir: str, name: str, texts: list[str]) -> np.ndarray:
    """Start the server, send raw strings, return the served logits; the server is stopped afterwards."""
    proc, url = start_server(artifact, tokenizer_dir)
    try:
        client = pdx.export.Client(url)
        client.wait_ready(timeout=120)
        return np.asarray(client.predict(name, list(texts)))
    finally:
        stop_server(proc)


def main(cfg: TextClassifyConfig) -> dict:
    started = time.perf_counter()
    texts, labels = topic_sentences(cfg.min_words)
    train_idx, test_idx = split(labels, cfg.test_fraction, cfg.seed)
    train_texts = [texts[i] for i in train_idx]
    tok = train_wordpiece(train_texts, vocab_size=cfg.vocab_size, fixed_length=cfg.max_length)
    ids = np.asarray(tok.encode_batch(texts), np.int32)                   # (N, max_length), [PAD] = 0
    x_train, y_train, x_test, y_test = ids[train_idx], labels[train_idx], ids[test_idx], labels[test_idx]

    pdx.seed(cfg.seed)
    config = BertConfig.from_preset(cfg.preset, vocab_size=tok.vocab_size, max_position_embeddings=cfg.max_length,
                                    pad_token_id=tok.pad_token_id, hidden_dropout_prob=cfg.dropout,
                                    attention_probs_dropout_prob=cfg.dropout)
    model = BertForSequenceClassification(config, num_classes=len(TOPICS))
    model, losses = train(model, x_train, y_train, cfg)
    preds = predict(model, x_test).argmax(-1)
    accuracy = float(np.mean(preds == y_test))
    majority = int(np.bincount(y_train).argmax())
    baseline = float(np.mean(y_test == majority))
    train_s = time.perf_counter() - started

    results = {"train_sentences": len(train_idx), "test_sentences": len(test_idx), "classes": len(TOPICS),
               "vocab_size": tok.vocab_size, "losses": losses, "accuracy": accuracy,
               "majority_baseline": baseline, "train_seconds": train_s}
    print(f"\n{len(texts)} sentences from pydoc topics {list(TOPICS)}; {len(train_idx)} train / "
          f"{len(test_idx)} held out (stratified); WordPiece vocab {tok.vocab_size}; "
          f"{cfg.preset} encoder, {cfg.epochs} epochs, loss {losses[0]:.3f} -> {losses[-1]:.3f}\n")
    print("| model | held-out accuracy |")
    print("|---|---|")
    print(f"| majority class ({TOPICS[majority]}) | {baseline:.3f} |")
    print(f"| {cfg.preset} fine-tuned | {accuracy:.3f} |")
    print(f"\n(tokenizer, training and evaluation: {train_s:.0f} s)")

    workdir = cfg.workdir or tempfile.mkdtemp(prefix="text_classify_")
    artifact = os.path.join(workdir, "topic-classifier")
    tokenizer_dir = os.path.join(workdir, "tokenizer")
    pdx.export.export(model, artifact, [InputSpec([None, cfg.max_length], "int32", "input_ids")],
                      name="topic-classifier", output_names=["logits"], differentiable=False)
    tok.save_pretrained(tokenizer_dir)
    exported = pdx.export.load(artifact)(x_test)
    results.update(artifact=artifact, tokenizer=tokenizer_dir,
                   exported_max_abs_diff=float(np.max(np.abs(exported - predict(model, x_test)))))
    print(f"\nexported to {artifact} (tokenizer: {tokenizer_dir}); exported vs eager logits: max |diff| "
          f"{results['exported_max_abs_diff']:.2e}")
    if cfg.serve:
        sample = [texts[i] for i in test_idx[:: max(1, len(test_idx) // 6)]][:6]
        served = serve_and_classify(artifact, tokenizer_dir, "topic-classifier", sample)
        local = pdx.export.load(artifact)(np.asarray(tok.encode_batch(sample), np.int32))
        results["served_agrees"] = bool(np.array_equal(served.argmax(-1), local.argmax(-1)))
        print(f"\npdx serve {artifact} --tokenizer {tokenizer_dir}: strings in, topics out "
              f"(same as the local artifact: {results['served_agrees']})\n")
        print("| sentence | served topic | true topic |")
        print("|---|---|---|")
        for text, row in zip(sample, served):
            print(f"| {text[:70]} | {TOPICS[int(row.argmax())]} | {TOPICS[int(labels[texts.index(text)])]} |")
    results["total_seconds"] = time.perf_counter() - started
    return results


if __name__ == "__main__":
    from _config_cli import parse_config  # recipes/ is sys.path[0] when a recipe runs

    main(parse_config(TextClassifyConfig, __doc__))
