"""recipes/ctr.py trains DeepFM with sparse table updates on its synthetic click log and beats AUC 0.75."""

import importlib.util
import os
import sys

import numpy as np

RECIPE = os.path.join(os.path.dirname(__file__), "..", "..", "recipes", "ctr.py")


def test_ctr_recipe_short_run(capsys):
    spec = importlib.util.spec_from_file_location("ctr_recipe", RECIPE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
        cfg = module.CTRRecipeConfig(train_examples=200_000, test_examples=20_000, epochs=1, buckets=2 ** 15)
        results = module.main(cfg)
        # the ground truth's AUC, recomputed with scikit-learn (an independent AUC) on the same held-out rows
        from sklearn.metrics import roc_auc_score

        _, _, clicks, prob = module.click_log(cfg)
        truth_auc = roc_auc_score(clicks[cfg.train_examples:], prob[cfg.train_examples:])
    finally:
        del sys.modules[spec.name]
    out = capsys.readouterr().out
    model, truth = results["deepfm (pdx, sparse Adagrad tables)"], results["ground truth (generating model)"]
    assert "| deepfm (pdx, sparse Adagrad tables) |" in out and "| ground truth (generating model) |" in out
    assert "split P('dp', None) over 8 device(s)" in out               # the table is split over the 8 test devices
    assert abs(truth["auc"] - truth_auc) < 2e-3, (truth["auc"], truth_auc)   # pdx.metric.Auc's histogram AUC
    assert model["auc"] >= 0.75, results                              # one pass over 200k clicks learns the log
    assert model["auc"] < truth["auc"]                                # the generating model is the ceiling
    assert np.mean(results["losses"][-3:]) < results["losses"][0]
