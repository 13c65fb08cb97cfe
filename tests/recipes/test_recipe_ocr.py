"""recipes/ocr.py end to end on a short schedule: both models learn, and the exported recognizer's IREE
llvm-cpu module gives XLA's logits within 1e-4 (the arm64-android module compiles too)."""

import importlib.util
import os
import sys

RECIPE = os.path.join(os.path.dirname(__file__), "..", "..", "recipes", "ocr.py")


def test_ocr_recipe_short_run(capsys):
    spec = importlib.util.spec_from_file_location("ocr_recipe", RECIPE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
        # Digits, 3-5 long, on 32x64 lines: a problem small enough to learn in a test's time.
        cfg = module.OCRConfig(rec_steps=200, rec_batch=16, rec_lr=1e-2, det_steps=80, det_lr=1e-2, det_batch=8,
                               width=64, scene=96, alphabet="0123456789", min_len=3, max_len=5, test_lines=200,
                               beam_lines=40, test_scenes=24)
        results = module.main(cfg)
    finally:
        del sys.modules[spec.name]
    out = capsys.readouterr().out
    assert "| CRNN export |" in out and "| DB (80 steps x 8) |" in out
    rec, det, exported = results["recognition"], results["detection"], results["export"]
    first, last = results["losses"]["recognizer"]
    assert last < 0.5 * first, results["losses"]
    # Guessing gives ~0 character accuracy (an empty or random string of digits); the model reads.
    assert rec["greedy"].char_accuracy > 0.5, rec
    assert rec["beam_subset"].char_accuracy > 0.5, rec
    assert det.recall > 0.8 and det.precision > 0.8, det
    assert exported["max_abs_diff"] < 1e-4 and exported["xla_vs_model"] < 1e-4, exported
    assert exported["same_text"]
    assert "iree-arm64-android" in exported["targets"]
