"""PaddleTest's `framework/api` suite, run against paddle and against pdx.

PaddleTest (github.com/PaddlePaddle/PaddleTest) is Paddle's own API test
suite: one pytest file per API, most of them built on a small harness
(`apibase.APIBase`) that runs an API eagerly ("dygraph"), checks the result
against numpy, takes the gradient of `mean(output)` and compares it with a
numeric gradient, then does the same as a static-graph program. This script
runs every test file of the chosen folders twice: once against the installed
paddle, once with `paddle` resolved to pdx. Files run one by one in worker
processes (one folder's files per worker, pytest in-process, `--chunk` files
per worker) with a timeout per file: a file that runs over it, or crashes its
worker, is recorded as such and a fresh worker takes the next file. It prints,
per folder, how many tests pass under each and the ratio, then the most
common reasons tests that pass under paddle fail under pdx (exception
messages with numbers blanked, grouped); `--record` saves them.

How `paddle` becomes pdx in the pdx subprocess, before the test file is
imported:
  - `sys.modules["paddle"]` is a module that forwards every attribute to pdx,
    and a meta path finder resolves `import paddle.X.Y` to the module
    `pdx.X.Y` (the same module object under both names);
  - JAX runs with x64 on (`JAX_ENABLE_X64=1`, pdx's documented switch), since
    the suite checks float64 results at 1e-6;
  - the harness's static-graph half is skipped under both paddle and pdx
    (`APIBase.static` reads False): pdx has one mode, eager ops compiled on
    request, and `paddle.enable_static()` (which the harness calls after its
    numeric gradient) does nothing here instead of raising;
  - the harness's dygraph backward (`loss.backward()` then `x.gradient()`)
    becomes `pdx.grad` of the same `mean(output)` with respect to the same
    inputs, and the harness's `x.stop_gradient = False` marks (which pdx
    rejects: gradients are taken with respect to function arguments) are
    accepted and ignored. Test files that call `.backward()` themselves run
    unchanged and fail with pdx's message, which the failure table counts.

Usage:
    python benchmarks/paddle_api_suite.py                      # all folders, both backends
    python benchmarks/paddle_api_suite.py --folders fft linalg --jobs 2
    python benchmarks/paddle_api_suite.py --files paddlebase/test_abs.py --backends pdx
    python benchmarks/paddle_api_suite.py --json out.json      # per-test outcomes and causes

The suite is read from `--root` (a `framework/api` directory); when that
does not exist it is extracted there from the PaddleTest git mirror
(`--mirror`, a bare repository) with `git archive`, with `framework/utils` beside
it (the helpers some test files import). Each backend runs in a fresh copy of
it (`run-paddle/`, `run-pdx/` beside the suite), since tests write files next to
themselves. Nothing is written into this repository unless `--json` /
`--causes` name a path in it.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import json
import os
import pathlib
import platform
import re
import shutil
import subprocess
import sys
import threading
import time
from typing import NamedTuple

DEFAULT_ROOT = "/tmp/paddletest/framework/api"
DEFAULT_MIRROR = "/work/.mirror/PaddlePaddle+PaddleTest/repo"
BACKENDS = ("paddle", "pdx")
REPO = pathlib.Path(__file__).resolve().parents[1]
_DEBUG = os.environ.get("PDX_SUITE_DEBUG") == "1"  # workers' stderr to the terminal


class FileResult(NamedTuple):
    """One test file under one backend: each test's outcome and, for a failure, its message."""

    outcomes: dict[str, str]  # test id -> "passed" / "failed" / "skipped"
    messages: dict[str, str]  # test id -> the exception's message (failed tests only)
    error: str  # a file-level failure: collection error, timeout, crash ("" when none)
    seconds: float


# ---------------------------------------------------------------------------------------------------
# The child: one test file under one backend.


def _install_pdx_as_paddle() -> None:
    """`import paddle` (and `paddle.X.Y`) gives pdx's modules; see the module docstring."""
    import importlib
    import importlib.abc
    import importlib.machinery
    import types

    import pdx

    class PaddleFace(types.ModuleType):
        """`paddle`: pdx's attributes, except the harness's static-mode switch, which does nothing."""

        def __getattr__(self, name):
            return getattr(pdx, name)

    face = PaddleFace("paddle", pdx.__doc__)
    face.__path__ = []  # a package: `import paddle.nn` asks the finder below
    face.enable_static = lambda *a, **k: None
    face.__file__ = pdx.__file__

    class Loader(importlib.abc.Loader):
        def __init__(self, module):
            self.module = module

        def create_module(self, spec):
            return self.module

        def exec_module(self, module):
            pass

    class Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path, target=None):
            if fullname != "paddle" and not fullname.startswith("paddle."):
                return None
            if fullname == "paddle":
                module = face
            else:
                target_name = "pdx" + fullname[len("paddle"):]
                try:
                    module = importlib.import_module(target_name)
                except ModuleNotFoundError as e:
                    if e.name and (target_name == e.name or target_name.startswith(e.name + ".")):
                        raise ModuleNotFoundError(f"No module named {target_name!r} (for {fullname!r})",
                                                  name=fullname) from None
                    raise
            return importlib.machinery.ModuleSpec(fullname, Loader(module), is_package=hasattr(module, "__path__"))

    sys.meta_path.insert(0, Finder())
    import jax.numpy as jnp

    array_type = type(jnp.zeros(()))
    mark = array_type.stop_gradient
    array_type.stop_gradient = property(mark.fget, lambda self, value: None, doc=mark.__doc__)


def _pdx_backward(self, res):
    """APIBase._dygraph_backward through pdx.grad: d mean(output) / d each tensor input."""
    import jax.numpy as jnp

    import pdx

    layer_type = "class" if not callable(getattr(self.func, "__code__", None)) else "func"
    layer_type = getattr(self, "_APIBase__layertype", layer_type)
    inputs = {k: v for k, v in self.kwargs.items() if isinstance(v, pdx.Tensor)}
    if layer_type == "class":
        inputs["data"] = self.data
    differentiable = {k: v for k, v in inputs.items() if jnp.issubdtype(v.dtype, jnp.inexact)}

    def loss(xs):
        kwargs = {**self.kwargs, **{k: v for k, v in xs.items() if k != "data"}}
        if layer_type == "func":
            out = self.func(**kwargs)
        else:
            out = self.func(**kwargs)(xs["data"])
        return pdx.mean(out[0] if isinstance(out, (list, tuple)) else out)

    grads = pdx.grad(loss)(differentiable) if differentiable else {}
    return {k: (grads[k].__array__() if k in grads else None) for k in inputs}


def _patch_harness(folder: pathlib.Path, backend: str) -> None:
    """Dygraph only: `APIBase.static` reads False; under pdx the backward goes through pdx.grad."""
    if not (folder / "apibase.py").is_file():
        return
    import apibase  # the folder's own copy of the harness

    apibase.APIBase.static = property(lambda self: False, lambda self, value: None)
    if backend == "pdx":
        apibase.APIBase._dygraph_backward = _pdx_backward


class _Collector:
    """A pytest plugin recording each test's outcome and failure message."""

    @staticmethod
    def _message(report) -> str:
        crash = getattr(report.longrepr, "reprcrash", None)
        if crash is not None:
            return crash.message
        return str(report.longrepr).strip().splitlines()[-1] if report.longrepr else ""

    def __init__(self):
        self.outcomes: dict[str, str] = {}
        self.messages: dict[str, str] = {}
        self.errors: list[str] = []
        self.causes: dict[str, str] = {}  # test id -> the exception an assertion of the harness replaced

    def pytest_runtest_makereport(self, item, call):
        # The harness's dtype check catches any exception and asserts instead ("type check Error"):
        # the exception it caught is the cause worth grouping.
        error = call.excinfo.value if call.excinfo is not None else None
        inner = getattr(error, "__context__", None)
        if isinstance(error, AssertionError) and inner is not None and not isinstance(inner, AssertionError):
            self.causes[item.nodeid] = f"{type(inner).__name__}: {inner}"
        elif isinstance(error, AssertionError) and isinstance(inner, AssertionError):
            self.causes[item.nodeid] = "AssertionError: values differ from the expected result"

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or report.outcome != "passed":
            if report.nodeid in self.outcomes and self.outcomes[report.nodeid] == "failed":
                return  # a teardown error after a failed call keeps the call's message
            self.outcomes[report.nodeid] = report.outcome
            if report.outcome == "failed":
                self.messages[report.nodeid] = self.causes.get(report.nodeid) or self._message(report)

    def pytest_collectreport(self, report):
        if report.outcome == "failed":
            self.errors.append("collection: " + self._message(report))


def _run_one(backend: str, path: pathlib.Path) -> dict:
    import pytest

    collector = _Collector()
    start = time.perf_counter()
    pytest.main([str(path), "-q", "-p", "no:cacheprovider", "-p", "no:warnings", "-o", "log_cli=false",
                 "--no-header", "-rN"], plugins=[collector])
    for name in [m for m, mod in list(sys.modules.items()) if mod.__dict__.get("__file__") == str(path)]:
        del sys.modules[name]  # the next folder may hold a file of the same name
    return {"outcomes": collector.outcomes, "messages": collector.messages, "error": "; ".join(collector.errors),
            "seconds": time.perf_counter() - start}


def _child(backend: str, folder: str) -> int:
    """A worker: reads test file paths (one folder's) from stdin, answers one JSON line per file."""
    answer = os.fdopen(os.dup(1), "w")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # pytest's and the tests' output go nowhere; the answers go to the parent
    sys.stdout = open(os.devnull, "w")  # (stderr stays: the parent sends it to /dev/null, --debug shows it)
    path = pathlib.Path(folder).resolve()
    sys.path.insert(0, str(path))
    os.chdir(path)
    error = ""
    try:
        if backend == "pdx":
            _install_pdx_as_paddle()
        _patch_harness(path, backend)
    except Exception as e:  # reported as each file's error, the table groups it
        error = f"harness: {type(e).__name__}: {e}"
    for line in sys.stdin:
        file = pathlib.Path(line.strip())
        if not error:
            _patch_harness(path, backend)  # again: a file before this one may have replaced the harness's methods
        result = ({"outcomes": {}, "messages": {}, "error": error, "seconds": 0.0} if error
                  else _run_one(backend, file))
        answer.write(json.dumps(result) + "\n")
        answer.flush()
    return 0


# ---------------------------------------------------------------------------------------------------
# The parent: files in subprocesses, the table.


def ensure_suite(root: pathlib.Path, mirror: pathlib.Path) -> pathlib.Path:
    """The `framework/api` directory at `root`, extracted from the bare git mirror when absent."""
    if root.is_dir():
        return root
    if not mirror.is_dir():
        raise SystemExit(f"--root {root} does not exist and --mirror {mirror} is not a git mirror of PaddleTest")
    top = root.parents[1]  # .../framework/api -> ...
    top.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "--git-dir", str(mirror), "archive", "HEAD", "framework/api", "framework/utils"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(top)], input=archive, check=True)
    return root


def workspace(root: pathlib.Path, backend: str) -> pathlib.Path:
    """A fresh copy of the suite (`framework/`, utils included) for one backend's run, at `run-<backend>/` beside
    the extracted suite: tests write files (saved models, logs) next to themselves, and a file one backend
    wrote must not be what the other one reads."""
    top = root.parents[1] / f"run-{backend}"
    shutil.rmtree(top, ignore_errors=True)
    shutil.copytree(root.parent, top / root.parent.name, symlinks=True)
    return top / root.parent.name / root.name


def discover(root: pathlib.Path, folders: list[str] | None, files: list[str] | None,
             every: dict[str, int] | None = None) -> list[pathlib.Path]:
    """The test files: `files`, or each folder's `test_*.py` (every n-th one where `every` says n)."""
    if files:
        return [root / f for f in files]
    chosen = folders or sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    every = every or {}
    return [p for folder in chosen for p in sorted((root / folder).glob("test_*.py"))[::every.get(folder, 1)]]


def _worker(backend: str, folder: pathlib.Path) -> subprocess.Popen:
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "GLOG_minloglevel": "3", "FLAGS_call_stack_level": "1",
           "PYTHONDONTWRITEBYTECODE": "1"}
    if backend == "pdx":
        env["JAX_ENABLE_X64"] = "1"
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return subprocess.Popen([sys.executable, __file__, "--child", backend, str(folder)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=None if _DEBUG else subprocess.DEVNULL, text=True, env=env,
                            cwd=folder)


def run_files(backend: str, files: list[pathlib.Path], timeout: float, startup: float = 90):
    """Yield (file, FileResult) for files of one folder, run one by one in a worker process.

    A file that runs past `timeout` seconds (plus `startup` for the worker's
    first file, which imports paddle or pdx) is recorded as a timeout; its
    worker is killed and a fresh one runs the files after it.
    """
    import selectors

    proc, first = None, True
    for file in files:
        if proc is None:
            proc, first = _worker(backend, file.parent), True
        start = time.perf_counter()
        proc.stdin.write(f"{file}\n")
        proc.stdin.flush()
        selector = selectors.DefaultSelector()
        selector.register(proc.stdout, selectors.EVENT_READ)
        ready = selector.select(timeout + (startup if first else 0))
        selector.close()
        line = proc.stdout.readline() if ready else ""
        seconds = time.perf_counter() - start
        first = False
        if line:
            data = json.loads(line)
            yield file, FileResult(data["outcomes"], data["messages"], data["error"], seconds)
            continue
        reason = f"timeout: the file ran over {timeout:.0f} s" if not ready else f"crash: exit code {proc.poll()}"
        proc.kill()
        proc.wait()
        proc = None
        yield file, FileResult({}, {}, reason, seconds)
    if proc is not None:
        proc.stdin.close()
        proc.wait()


_NUMBER = re.compile(r"(?<![A-Za-z_])[-+]?\d+(\.\d+)?(e[-+]?\d+)?")
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
_ARRAY = re.compile(r"\[[^\[\]]{40,}\]")


def cause(message: str) -> str:
    """A failure message as a group key: first line, addresses and numbers blanked, long lists cut."""
    line = next((s.strip() for s in message.splitlines() if s.strip()), "(no message)")
    line = _ADDRESS.sub("<address>", line)
    line = _ARRAY.sub("[...]", line)
    line = _NUMBER.sub("N", line)
    return line[:160]


class FolderRow(NamedTuple):
    folder: str
    files: int
    tests: int
    paddle: int
    pdx: int
    both: int

    @property
    def ratio(self) -> float:
        """Tests passing under pdx among those passing under paddle."""
        return self.both / self.paddle if self.paddle else 0.0


def summarize(root: pathlib.Path, results: dict[tuple[str, str], FileResult]):
    """(per-folder rows, cause -> count over tests passing under paddle and failing under pdx, examples)."""
    by_folder: dict[str, list[str]] = collections.defaultdict(list)
    for backend, rel in results:
        if rel not in by_folder[rel.split("/")[0]]:
            by_folder[rel.split("/")[0]].append(rel)
    rows, causes, examples = [], collections.Counter(), {}
    for folder, rels in sorted(by_folder.items()):
        tests = n_paddle = n_pdx = n_both = 0
        for rel in rels:
            p = results.get(("paddle", rel), FileResult({}, {}, "", 0))
            x = results.get(("pdx", rel), FileResult({}, {}, "", 0))
            ids = set(p.outcomes) | set(x.outcomes)
            tests += len(ids)
            n_paddle += sum(p.outcomes.get(i) == "passed" for i in ids)
            n_pdx += sum(x.outcomes.get(i) == "passed" for i in ids)
            for i in ids:
                if p.outcomes.get(i) != "passed" and ("paddle", rel) in results:
                    continue
                if x.outcomes.get(i) == "passed":
                    n_both += 1
                    continue
                if ("pdx", rel) not in results:
                    continue
                key = cause(x.messages.get(i) or x.error or "not collected")
                causes[key] += 1
                examples.setdefault(key, i)
        rows.append(FolderRow(folder, len(rels), tests, n_paddle, n_pdx, n_both))
    return rows, causes, examples


def table(rows: list[FolderRow]) -> str:
    lines = ["| folder | files | tests | pass paddle | pass pdx | pdx / paddle |", "|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r.folder} | {r.files} | {r.tests} | {r.paddle} | {r.pdx} | {100 * r.ratio:.1f}% |")
    total = FolderRow("**all**", *(sum(getattr(r, f) for r in rows) for f in FolderRow._fields[1:]))
    lines.append(f"| {total.folder} | {total.files} | {total.tests} | {total.paddle} | {total.pdx} | "
                 f"{100 * total.ratio:.1f}% |")
    return "\n".join(lines)


def write_record(path: pathlib.Path, rows, causes, examples, results, every, elapsed) -> None:
    """The run's summary: table rows, every failure cause with its count, and each file's tests passing under pdx."""
    data = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": machine(), "every": every,
        "minutes": round(elapsed / 60, 1),
        "rows": [dict(r._asdict(), ratio=round(r.ratio, 4)) for r in rows],
        "causes": [{"cause": k, "count": c, "example": examples[k]} for k, c in causes.most_common()],
        "pdx_passing": {rel: sorted(i for i, o in r.outcomes.items() if o == "passed")
                        for (b, rel), r in sorted(results.items()) if b == "pdx"},
    }
    path.write_text(json.dumps(data, indent=1) + "\n")


def machine() -> str:
    cpu, simd = platform.processor() or platform.machine(), ""
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
            if line.startswith("flags"):
                simd = ", AVX-512" if " avx512f" in line else ", AVX2" if " avx2" in line else ""
                break
    except OSError:
        pass
    return f"{cpu}{simd}, {os.cpu_count()} cores, no GPU (JAX_PLATFORMS=cpu)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=DEFAULT_ROOT, help="PaddleTest's framework/api directory")
    parser.add_argument("--mirror", default=DEFAULT_MIRROR, help="bare git mirror of PaddleTest to extract from")
    parser.add_argument("--folders", nargs="*", help="folders of framework/api to run (default: all)")
    parser.add_argument("--files", nargs="*", help="test files relative to --root (instead of --folders)")
    parser.add_argument("--backends", nargs="*", default=list(BACKENDS), choices=BACKENDS)
    parser.add_argument("--timeout", type=float, default=120, help="seconds per test file and backend")
    parser.add_argument("--chunk", type=int, default=40, help="files per worker process (one folder's)")
    parser.add_argument("--jobs", type=int, default=2, help="test files run at once")
    parser.add_argument("--top", type=int, default=25, help="failure causes to print")
    parser.add_argument("--every", nargs="*", default=[], metavar="FOLDER=N",
                        help="run every N-th file of FOLDER only (a sample of a large folder)")
    parser.add_argument("--reuse", metavar="JSON",
                        help="take the results of a previous --json run for the backends not in --fresh")
    parser.add_argument("--fresh", nargs="*", choices=BACKENDS,
                        help="with --reuse: the backends to run again (default: those --reuse lacks a file for)")
    parser.add_argument("--json", help="write per-test outcomes, the table and the causes here")
    parser.add_argument("--record", metavar="JSON",
                        help="write the table, the failure causes and the tests passing under pdx (the CI "
                             "test's reference, benchmarks/paddle_api_suite.json)")
    parser.add_argument("--child", nargs=2, metavar=("BACKEND", "FOLDER"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return _child(*args.child)

    root = ensure_suite(pathlib.Path(args.root), pathlib.Path(args.mirror))
    every = {k: int(v) for k, v in (item.split("=", 1) for item in args.every)}
    files = discover(root, args.folders, args.files, every)
    results: dict[tuple[str, str], FileResult] = {}
    if args.reuse:
        for key, r in json.loads(pathlib.Path(args.reuse).read_text())["files"].items():
            backend, rel = key.split(":", 1)
            if backend in args.backends and backend not in (args.fresh or ()) and root / rel in files:
                results[(backend, rel)] = FileResult(**r)
    by_folder = collections.defaultdict(list)
    for f in files:
        by_folder[f.parent].append(f)
    todo = {b: {d: [f for f in fs if (b, str(f.relative_to(root))) not in results] for d, fs in by_folder.items()}
            for b in args.backends}
    chunks = [(b, fs[i:i + args.chunk]) for b in args.backends for fs in todo[b].values()
              for i in range(0, len(fs), args.chunk)]
    lock = threading.Lock()
    total = len(files) * len(args.backends) - len(results)
    done = len(results)
    start = time.perf_counter()

    spaces = {b: workspace(root, b) for b in args.backends if any(c[0] == b for c in chunks)}

    def work(backend, chunk):
        copies = [spaces[backend] / f.relative_to(root) for f in chunk]
        for f, r in run_files(backend, copies, args.timeout):
            rel = str(f.relative_to(spaces[backend]))
            with lock:
                results[(backend, rel)] = r
                passed = sum(o == "passed" for o in r.outcomes.values())
                print(f"[{len(results) - done}/{total}] {backend:<6} {rel}: {passed}/{len(r.outcomes)} passed in "
                      f"{r.seconds:.0f} s" + (f" ({r.error[:100]})" if r.error else ""), file=sys.stderr, flush=True)

    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        for fut in [pool.submit(work, b, c) for b, c in chunks]:
            fut.result()
    rows, causes, examples = summarize(root, results)
    elapsed = time.perf_counter() - start
    sampled = ", ".join(f"every {n}th file of {k}" for k, n in every.items())
    print(f"PaddleTest framework/api, dygraph only{'; ' + sampled if sampled else ''}; "
          f"{time.strftime('%Y-%m-%d')}; {machine()}; "
          f"{elapsed / 60:.1f} min\n")
    print(table(rows))
    print(f"\nTop failure causes (tests passing under paddle, failing under pdx; {sum(causes.values())} in all):")
    for key, count in causes.most_common(args.top):
        print(f"{count:5d}  {key}    e.g. {examples[key]}")
    if args.json:
        data = {
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": machine(), "every": every,
            "minutes": round(elapsed / 60, 1),
            "rows": [dict(r._asdict(), ratio=round(r.ratio, 4)) for r in rows],
            "causes": [{"cause": k, "count": c, "example": examples[k]} for k, c in causes.most_common()],
            "files": {f"{b}:{rel}": r._asdict() for (b, rel), r in sorted(results.items())},
        }
        pathlib.Path(args.json).write_text(json.dumps(data, indent=1) + "\n")
    if args.record:
        write_record(pathlib.Path(args.record), rows, causes, examples, results, every, elapsed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
