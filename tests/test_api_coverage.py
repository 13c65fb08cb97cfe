"""The Paddle API coverage report, run against the installed paddlepaddle.

The floors are what pdx reaches today: a change that loses a name fails here.
"""

import json
import subprocess
import sys

import pytest

from pdx import _coverage

# paddle module -> lowest accepted coverage (implemented + alias, in-place names excluded).
FLOORS = {
    "paddle": 0.97,
    "paddle.Tensor": 0.92,
    "paddle.nn": 1.0,
    "paddle.nn.functional": 0.98,
    "paddle.linalg": 0.97,
    "paddle.fft": 1.0,
    "paddle.signal": 1.0,
    "paddle.special": 1.0,
    "paddle.distribution": 1.0,
    "paddle.sparse": 1.0,
    "paddle.sparse.nn": 1.0,
    "paddle.sparse.nn.functional": 1.0,
    "paddle.geometric": 1.0,
    "paddle.autograd": 1.0,
    "paddle.device": 0.75,
    "paddle.utils": 1.0,
    "paddle.amp": 1.0,
    "paddle.vision.transforms": 1.0,
    "paddle.quantization": 1.0,
    "paddle.distributed": 0.81,
    "paddle.text": 0.22,
}


@pytest.fixture(scope="module")
def reports(paddle):
    return _coverage.report()


def test_coverage_floors(reports):
    low = {m: round(reports[m].coverage, 4) for m, floor in FLOORS.items() if reports[m].coverage < floor}
    assert not low, f"coverage fell below the floor: {low} (floors {FLOORS})"


def test_every_public_paddle_module_is_reported_or_excluded_with_a_reason(reports):
    modules = _coverage.paddle_modules()
    assert len(modules) > 500  # the walk reached paddle's whole package tree
    left_out = _coverage.exclusions()
    unaccounted = [m for m in modules if m not in reports and m not in left_out]
    assert not unaccounted, f"paddle modules neither reported nor excluded: {unaccounted}"
    assert not set(reports) & set(left_out)
    assert all(len(reason) > 30 for reason in left_out.values())
    for m in ("paddle.nn.layer.conv", "paddle.tensor.math", "paddle.vision.transforms.transforms",
              "paddle.hapi.model", "paddle.nn.Layer", "paddle.Model", "paddle.Tensor", "paddle.base.core"):
        assert m in reports, m
    assert reports["paddle.nn.layer.conv"].names["Conv2D"].status == "implemented"
    assert "paddle.base.executor" in left_out and "paddle.dataset.mnist" in left_out


def test_every_difference_is_a_paddle_name_with_a_reason(reports):
    for full, reason in _coverage.DIFFERENCES.items():
        module, name = full.rsplit(".", 1)
        assert module in reports, f"DIFFERENCES names {full}: {module} is not a reported module"
        assert name in reports[module].names, f"DIFFERENCES names {full}, which paddle does not have"
        assert reports[module].names[name].status == "different" and len(reason) > 20


def test_statuses_are_consistent(reports):
    import pdx.nn

    nn = reports["paddle.nn"].names
    assert nn["Linear"].status == "implemented"
    assert nn.get("Conv2d", _coverage.Entry("alias")).status in ("alias", "missing")
    assert reports["paddle.nn.functional"].names["relu_"].status == "in-place"
    assert hasattr(pdx.nn, "Linear")


def test_cli_json_and_bad_module(tmp_path, paddle):
    out = tmp_path / "cov.json"
    r = subprocess.run([sys.executable, "-m", "pdx.cli", "coverage", "paddle.nn", "--missing", "--json", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "paddle.nn" in r.stdout and "%" in r.stdout
    data = json.loads(out.read_text())
    names = data["modules"]["paddle.nn"]["names"]
    assert names["Linear"]["status"] == "implemented"
    assert set(data["modules"]["paddle.nn"]["counts"]) == {"implemented", "alias", "different", "in-place", "missing"}
    bad = subprocess.run([sys.executable, "-m", "pdx.cli", "coverage", "paddle.nope"],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "paddle.nope" in bad.stderr
