"""pdx.Model.fit end to end on scikit-learn's digits: accuracy, progress bar,
EarlyStopping, ModelCheckpoint, TensorBoard event files, CSV logs,
save/load, predict, and bf16 O1/O2 against float32."""

import csv
import glob
import os

import numpy as np
import pytest

import pdx
import pdx.nn.functional as F
from pdx import nn


class DigitsNet(nn.Layer):
    """A small CNN for 1x8x8 digits (LeNet-like)."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2D(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2D(2),
                                      nn.Conv2D(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2D(2))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))

    def forward(self, x):
        return self.classifier(self.features(x))


@pytest.fixture(scope="module")
def digits():
    from sklearn.datasets import load_digits

    images, labels = load_digits(return_X_y=True)
    images = (images / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    order = np.random.default_rng(0).permutation(len(images))
    test, train = order[:359], order[359:]
    return (images[train], labels[train].astype(np.int32)), (images[test], labels[test].astype(np.int32))


def _fit(digits, amp_configs=None, epochs=10, **fit_kwargs):
    (x, y), (xt, yt) = digits
    pdx.seed(0)
    net = DigitsNet()
    model = pdx.Model(net)
    model.prepare(pdx.optimizer.Adam(2e-3, parameters=net), F.cross_entropy, pdx.metric.Accuracy(),
                  amp_configs=amp_configs)
    model.fit((x, y), batch_size=32, epochs=epochs, drop_last=True, **fit_kwargs)
    return model, model.evaluate((xt, yt), batch_size=len(xt), verbose=0)["acc"]


@pytest.fixture(scope="module")
def trained(digits, tmp_path_factory):
    root = tmp_path_factory.mktemp("fit")
    (x, y), (xt, yt) = digits
    callbacks = [pdx.callbacks.VisualDL(str(root / "tb")), pdx.callbacks.CSVLogger(str(root / "log.csv")),
                 pdx.callbacks.EarlyStopping(monitor="acc", mode="max", patience=6, save_best_model=True)]
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        model, acc = _fit(digits, eval_data=(xt, yt), save_dir=str(root / "ckpt"), save_freq=4, verbose=1,
                          log_freq=5, callbacks=callbacks)
    return model, acc, root, out.getvalue()


def test_fit_reaches_97_percent_with_progress_bar(trained):
    model, acc, _, stdout = trained
    assert acc >= 0.97, acc
    assert "Epoch 1/10" in stdout and "step/s" in stdout and "loss=" in stdout and "acc=" in stdout
    assert "44/44" in stdout  # step / total (1438 // 32 batches per epoch)
    assert int(model.train_state.step) > 0


def test_model_checkpoint_and_best_model_files(trained):
    _, _, root, _ = trained
    saved = sorted(os.path.basename(p) for p in glob.glob(str(root / "ckpt" / "*.pdparams.safetensors")))
    assert "final.pdparams.safetensors" in saved
    assert {"0.pdparams.safetensors", "4.pdparams.safetensors", "8.pdparams.safetensors"} <= set(saved)
    assert "3.pdparams.safetensors" not in saved  # save_freq=4 counts epochs from 0, as Paddle does
    assert "best_model.pdparams.safetensors" in saved  # EarlyStopping(save_best_model=True)


def test_tensorboard_event_file_reads_back(trained):
    from tensorboard.backend.event_processing import event_accumulator

    _, _, root, _ = trained
    acc = event_accumulator.EventAccumulator(str(root / "tb"), size_guidance={"scalars": 0, "histograms": 0})
    acc.Reload()
    tags = acc.Tags()
    assert {"train/loss", "train/acc", "train/lr", "eval/loss", "eval/acc"} <= set(tags["scalars"])
    losses = [e.value for e in acc.Scalars("train/loss")]
    assert len(losses) == 10 * 44 and losses[-1] < losses[0]  # one per step; 44 updates/epoch with drop_last
    assert acc.Scalars("eval/acc")[-1].value >= 0.97
    assert "classifier.3.weight" in tags["histograms"]


def test_csv_logger_rows(trained):
    _, _, root, _ = trained
    with open(root / "log.csv") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["epoch"]) for r in rows] == list(range(1, 11))
    assert {"loss", "acc", "eval_loss", "eval_acc"} <= set(rows[0])
    assert float(rows[-1]["eval_acc"]) >= 0.97


def test_early_stopping_stops_training(trained, digits, tmp_path):
    model, _, _, _ = trained
    (x, y), (xt, yt) = digits
    step0 = int(model.train_state.step)
    stop = pdx.callbacks.EarlyStopping(monitor="acc", mode="max", patience=1, baseline=1.01, save_best_model=False)
    model.fit((x, y), (xt, yt), batch_size=32, epochs=5, drop_last=True, verbose=0, callbacks=[stop])
    assert model.stop_training
    assert int(model.train_state.step) - step0 == 44  # one epoch, then the unreachable baseline stops it


def test_save_load_roundtrip_and_predict(trained, digits, tmp_path):
    model, _, _, _ = trained
    _, (xt, yt) = digits
    model.save(str(tmp_path / "m"))
    fresh = pdx.Model(DigitsNet())
    fresh.prepare(pdx.optimizer.Adam(2e-3, parameters=fresh.network), F.cross_entropy, pdx.metric.Accuracy())
    fresh.load(str(tmp_path / "m"))
    a = model.predict((xt,), batch_size=128, stack_outputs=True, verbose=0)[0]
    b = fresh.predict((xt,), batch_size=128, stack_outputs=True, verbose=0)[0]
    assert a.shape == (359, 10)
    np.testing.assert_array_equal(a, b)
    assert int(fresh.train_state.step) == int(model.train_state.step)
    for name in model.train_state.params:  # the network object itself follows the TrainState
        np.testing.assert_array_equal(np.asarray(fresh.network.state_dict()[name]), np.asarray(model.state_dict()[name]))
    assert (a.argmax(-1) == yt).mean() >= 0.97


def test_load_mismatch_is_clear(trained, tmp_path):
    model, _, _, _ = trained
    model.save(str(tmp_path / "m"), training=False)
    other = pdx.Model(nn.Sequential(nn.Flatten(), nn.Linear(64, 10)))
    other.prepare(loss=F.cross_entropy)
    with pytest.raises(ValueError, match="skip_mismatch"):
        other.load(str(tmp_path / "m"))
    with open(tmp_path / "m.pdparams.safetensors", "r+b") as f:  # corrupt the last byte in place
        f.seek(-1, 2)
        last = f.read(1)
        f.seek(-1, 2)
        f.write(b"\x00" if last != b"\x00" else b"\x01")
    with pytest.raises(ValueError, match="sha256"):
        model.load(str(tmp_path / "m"))


@pytest.mark.parametrize("level", ["O1", "O2"])
def test_bf16_matches_fp32_accuracy(trained, digits, level):
    _, fp32_acc, _, _ = trained
    model, acc = _fit(digits, amp_configs={"level": level, "dtype": "bfloat16"}, verbose=0)
    print(f"digits test accuracy: bf16 {level} {acc:.4f}, float32 {fp32_acc:.4f}")
    assert abs(acc - fp32_acc) <= 0.01, (level, acc, fp32_acc)
    # the master weights stay float32
    assert all(str(v.dtype) == "float32" for v in model.train_state.params.values())
