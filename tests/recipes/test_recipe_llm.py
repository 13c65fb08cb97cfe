"""The large-model chain end to end on the tiny model: base -> SFT (full, LoRA, QLoRA) -> DPO / SimPO -> Hugging Face.

Each recipe runs as a subprocess (as a user runs it) and reports JSON lines.
SFT must teach the chat-format task to held-out prompts (exact match rises
by at least 0.8 for full fine-tuning); LoRA must reach at least 75% of that
gain with < 5% of the base's parameters trainable; a run stopped and resumed
from its checkpoint gives bitwise the same losses as a straight run; DPO and
SimPO must raise the held-out chosen-vs-rejected log-prob margin; the exported
directory loads in transformers, which answers a held-out prompt correctly.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

RECIPES = os.path.join(os.path.dirname(__file__), "..", "..", "recipes")
pytestmark = pytest.mark.xdist_group("llm_recipes")  # one worker runs the module fixture


def run(script, *args, log=None):
    cmd = [sys.executable, os.path.join(RECIPES, script), *args] + (["--log_file", str(log)] if log else [])
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-4000:]
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def done(records):
    return next(r for r in records if r.get("event") == "done")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("llm")


@pytest.fixture(scope="module")
def full(workdir):
    return done(run("llm_finetune.py", "--mode", "full", "--out", str(workdir / "full")))


def test_sft_full_lora_and_qlora_answer_held_out_prompts(full, workdir):
    base = str(workdir / "full" / "base")
    assert full["exact_match_before"] < 0.05 and full["exact_match_after"] - full["exact_match_before"] >= 0.8, full
    gain = full["exact_match_after"] - full["exact_match_before"]
    lora = done(run("llm_finetune.py", "--mode", "lora", "--base", base, "--out", str(workdir / "lora")))
    assert lora["trainable_share"] < 0.05, lora
    assert lora["exact_match_after"] - lora["exact_match_before"] >= 0.75 * gain, (lora, full)
    qlora = done(run("llm_finetune.py", "--mode", "qlora", "--base", base, "--out", str(workdir / "qlora")))
    assert qlora["trainable_share"] < 0.05 and qlora["exact_match_after"] >= 0.75 * gain, qlora
    assert os.path.isfile(workdir / "lora" / "adapter" / "lora_model.safetensors")

    # the merged LoRA model, exported, runs in transformers and answers a held-out prompt
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    sys.path.insert(0, RECIPES)
    import _llm_tasks as tasks

    tok = transformers.AutoTokenizer.from_pretrained(str(workdir / "lora" / "hf"))
    hf = transformers.AutoModelForCausalLM.from_pretrained(str(workdir / "lora" / "hf"), dtype=torch.float32).eval()
    _, held_out = tasks.strings(0, 4000, 256)
    right = 0
    for s in held_out[:8]:
        prompt = tok.apply_chat_template(tasks.chat(s)[:1], add_generation_prompt=True, tokenize=False)
        ids = tok(prompt, add_special_tokens=False, return_tensors="pt")["input_ids"]
        with torch.no_grad():
            out = hf.generate(ids, max_new_tokens=6, do_sample=False, pad_token_id=tok.pad_token_id)
        right += tok.decode(out[0, ids.shape[1]:]).startswith(s[::-1] + "<|im_end|>")
    assert right >= 6, right


def test_resume_gives_bitwise_equal_losses(full, workdir):
    base = str(workdir / "full" / "base")
    common = ["--mode", "lora", "--base", base, "--steps", "60", "--save_every", "30", "--n_eval", "64"]
    straight = run("llm_finetune.py", *common, "--out", str(workdir / "straight"))
    ckpt = str(workdir / "ckpt")
    first = run("llm_finetune.py", *common, "--out", str(workdir / "resumed"), "--ckpt_dir", ckpt, "--stop_after", "30")
    assert first[-1] == {"event": "stopped", "step": 30}
    second = run("llm_finetune.py", *common, "--out", str(workdir / "resumed"), "--ckpt_dir", ckpt)
    assert {"event": "resumed", "step": 30} in second
    losses = lambda records: {r["step"]: r["loss"] for r in records if "loss" in r and "step" in r}  # noqa: E731
    want, got = losses(straight), {**losses(first), **losses(second)}
    # the same loss at every logged step (the stopped run also logs its last step, 30)
    assert set(got) - set(want) <= {30} and all(got[s] == want[s] for s in want), (got, want)
    assert done(second)["exact_match_after"] == done(straight)["exact_match_after"]

    # the LoRA checkpoint converts to a Hugging Face directory equal to the recipe's own merged export
    out = subprocess.run([sys.executable, "-m", "pdx.cli", "ckpt", "convert", ckpt, str(workdir / "converted"),
                          "--to", "hf", "--config", os.path.join(base, "config.json"),
                          "--lora", str(workdir / "resumed" / "adapter"), "--tokenizer", base],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    from safetensors.numpy import load_file

    got = load_file(str(workdir / "converted" / "model.safetensors"))
    want = load_file(str(workdir / "resumed" / "hf" / "model.safetensors"))
    assert sorted(got) == sorted(want)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-6, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("args", [["--loss", "dpo", "--ref", "once"], ["--loss", "simpo"]])
def test_preference_tuning_raises_the_held_out_margin(full, workdir, args):
    sft = str(workdir / "full" / "hf")  # the full SFT model as the starting policy
    result = done(run("llm_dpo.py", "--base", sft, "--steps", "100", "--out", str(workdir / "dpo" / args[1]), *args))
    assert result["margin_after"] > result["margin_before"] + 5.0, result
    assert np.isfinite(result["margin_after"])
