"""benchmarks/paddle_api_suite.py: PaddleTest's framework/api run against paddle and against pdx.

PaddleTest is not part of this repository. The grouping and the table are
checked on made-up results; a handful of PaddleTest files are run under pdx
from the PaddleTest git mirror (the machine that runs this suite has one at
`paddle_api_suite.DEFAULT_MIRROR`), and every test the last full run recorded
as passing under pdx (benchmarks/paddle_api_suite.json) must still pass.
"""

import importlib.util
import json
import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("paddle_api_suite", REPO / "benchmarks" / "paddle_api_suite.py")
suite = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(suite)

# Small, quick files of one folder (one worker process): transforms, frequencies, a gradient check.
HANDFUL = ["fft/test_fftfreq.py", "fft/test_fftshift.py", "fft/test_rfft.py", "fft/test_rfft2.py"]


def test_causes_group_messages_and_the_table_counts():
    assert suite.cause("AssertionError: shape (3, 4) vs 0x7f00aa\n more") == "AssertionError: shape (N, N) vs <address>"
    r = suite.FileResult
    results = {
        ("paddle", "a/test_x.py"): r({"t1": "passed", "t2": "passed", "t3": "failed"}, {}, "", 1.0),
        ("pdx", "a/test_x.py"): r({"t1": "passed", "t2": "failed", "t3": "failed"}, {"t2": "TypeError: bad 3"}, "", 1.0),
        ("paddle", "b/test_y.py"): r({"u1": "passed"}, {}, "", 1.0),
        ("pdx", "b/test_y.py"): r({}, {}, "collection: ImportError: no 7", 1.0),
    }
    rows, causes, examples = suite.summarize(pathlib.Path("/nowhere"), results)
    assert [(x.folder, x.tests, x.paddle, x.pdx, x.both) for x in rows] == [("a", 3, 2, 1, 1), ("b", 1, 1, 0, 0)]
    assert causes == {"TypeError: bad N": 1, "collection: ImportError: no N": 1}
    assert "| **all** | 2 | 4 | 3 | 1 | 33.3% |" in suite.table(rows)


def test_a_handful_of_paddletest_files_keep_passing_under_pdx(tmp_path):
    mirror = pathlib.Path(suite.DEFAULT_MIRROR)
    if not mirror.is_dir():
        pytest.skip(f"needs the PaddleTest git mirror at {mirror} (fetch github:PaddlePaddle/PaddleTest)")
    wanted = [f"framework/api/{f}" for f in HANDFUL] + ["framework/api/fft/apibase.py"]
    archive = subprocess.run(["git", "--git-dir", str(mirror), "archive", "HEAD", *wanted], capture_output=True,
                             check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tmp_path)], input=archive, check=True)
    root = tmp_path / "framework" / "api"
    got = {str(f.relative_to(root)): r for f, r in suite.run_files("pdx", [root / f for f in HANDFUL], timeout=120)}
    recorded = json.loads((REPO / "benchmarks" / "paddle_api_suite.json").read_text())["pdx_passing"]
    lost = {f: sorted(set(recorded[f]) - {i for i, o in got[f].outcomes.items() if o == "passed"})
            for f in HANDFUL}
    assert not any(lost.values()), (lost, {f: (got[f].error, got[f].messages) for f in HANDFUL})
    assert sum(len(recorded[f]) for f in HANDFUL) >= 20  # the recorded run reached these files
