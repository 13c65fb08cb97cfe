"""recipes/text_classify.py on a short schedule: beats the majority baseline, and `pdx serve --tokenizer`
answers raw strings over real HTTP with the exported classifier's logits."""

import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

import pdx
from pdx.models.bert import train_wordpiece
from pdx.text import Tokenizer

RECIPE = os.path.join(os.path.dirname(__file__), "..", "..", "recipes", "text_classify.py")


def test_text_classify_recipe_short_run_and_served_strings(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("text_classify_recipe", RECIPE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
        cfg = module.TextClassifyConfig(epochs=5, max_length=32, vocab_size=1500, serve=False, workdir=str(tmp_path))
        results = module.main(cfg)
    finally:
        del sys.modules[spec.name]
    out = capsys.readouterr().out
    assert "| majority class (specialnames) |" in out and "| bert-tiny fine-tuned |" in out
    # six topics, the largest about a quarter of the sentences: a learned classifier is far above it
    assert 0.2 < results["majority_baseline"] < 0.3, results
    assert results["accuracy"] > results["majority_baseline"] + 0.15, results
    assert results["losses"][-1] < results["losses"][0]
    assert results["exported_max_abs_diff"] < 1e-4

    texts = ["Return a copy of the string with all the cased characters converted to uppercase.",
             "The debugger prompt accepts commands such as step, next and continue.",
             "A compound statement consists of one or more clauses."]
    tok = Tokenizer.from_pretrained(results["tokenizer"])
    ids = np.asarray(tok.encode_batch(texts), np.int32)
    assert ids.shape == (3, 32) and (ids[:, 0] == tok.token_to_id("[CLS]")).all()
    local = pdx.export.load(results["artifact"])(ids)

    proc, url = module.start_server(results["artifact"], results["tokenizer"])
    try:
        client = pdx.export.Client(url)
        client.wait_ready(timeout=120)
        served = client.predict("topic-classifier", texts)                       # raw strings in
        np.testing.assert_allclose(served, local, atol=1e-4)
        one = client.predict("topic-classifier", texts[1])                       # one string
        np.testing.assert_allclose(one, local[1:2], atol=1e-4)
        by_ids = client.predict("topic-classifier", ids)                         # token ids still work
        np.testing.assert_allclose(by_ids, local, atol=1e-4)
        with pytest.raises(ValueError, match="not a mix"):
            client.predict("topic-classifier", ["a text", [1, 2, 3]])
    finally:
        assert module.stop_server(proc) == 0

    # a tokenizer that does not pad to a fixed length cannot batch rows: pdx serve refuses it (usage error)
    train_wordpiece(texts * 10, vocab_size=60).save_pretrained(tmp_path / "free-length")
    refused = subprocess.run([sys.executable, "-m", "pdx.cli", "serve", results["artifact"], "--tokenizer",
                              str(tmp_path / "free-length"), "--port", "0"], capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "fixed length" in refused.stderr, refused.stderr
