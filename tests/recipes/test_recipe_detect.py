"""recipes/detect.py trains the FCOS detector on generated shapes, beats the untrained model by far,
and exports a program (NMS inside) whose detections equal the eager model's."""

import importlib.util
import os
import sys

RECIPE = os.path.join(os.path.dirname(__file__), "..", "..", "recipes", "detect.py")


def test_detect_recipe_short_run(capsys):
    spec = importlib.util.spec_from_file_location("detect_recipe", RECIPE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
        cfg = module.DetectConfig(train_images=512, test_images=64, steps=150, export=True)
        results = module.main(cfg)
    finally:
        del sys.modules[spec.name]
    out = capsys.readouterr().out
    assert "| untrained |" in out and "| trained |" in out and "mAP@0.5" in out
    untrained, trained = results["untrained"], results["trained"]
    # an untrained detector scores ~0.001 mAP@0.5; 150 steps reach ~0.33 (seed 0)
    assert untrained["map50"] < 0.02, untrained
    assert trained["map50"] > 0.2, trained
    assert trained["map"] > 0.08 and trained["map"] < trained["map50"], trained
    assert results["losses"][-1] < 0.6 * results["losses"][0], results["losses"]
    assert results["export_max_abs_diff"] < 1e-4
