"""recipes/compress.py runs every compression method end to end on a short schedule and reports a row each."""

import importlib.util
import os
import sys

RECIPE = os.path.join(os.path.dirname(__file__), "..", "..", "recipes", "compress.py")


def test_compress_recipe_short_run(capsys):
    spec = importlib.util.spec_from_file_location("compress_recipe", RECIPE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
        cfg = module.CompressConfig(scale=0.25, student_scale=0.25, size=32, epochs=6, qat_epochs=1,
                                    finetune_epochs=1, latency=False, paddle=True)
        results = module.main(cfg)
    finally:
        del sys.modules[spec.name]
    out = capsys.readouterr().out
    names = ["float32", "PTQ int8", "QAT int8", "pruned 50% + fine-tune", "student x0.25 alone",
             "student x0.25 distilled", "paddle PTQ int8 (reference)"]
    assert list(results) == names
    assert all(f"| {n} |" in out for n in names)
    base = results["float32"]["accuracy"]
    assert base > 0.5, results                                     # six short epochs already learn the digits
    assert results["pruned 50% + fine-tune"]["flops"] < 0.8 * results["float32"]["flops"]
    # int8 post-training quantization of a trained model stays close to float32, in pdx as in paddle
    assert results["PTQ int8"]["accuracy"] >= base - 0.05
    assert abs(results["paddle PTQ int8 (reference)"]["accuracy"] - results["PTQ int8"]["accuracy"]) < 0.05
