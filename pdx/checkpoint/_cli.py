"""`pdx ckpt`: list, inspect, verify, convert, reshard, diff, average and prune checkpoints.

    pdx ckpt ls DIR                         steps, committed/incomplete, size, time
    pdx ckpt inspect DIR[/STEP]|FILE        tree: shapes, dtypes, shardings, bytes
    pdx ckpt verify DIR[/STEP]              sha256 of every file against the manifest
    pdx ckpt convert SRC DST                checkpoint <-> .safetensors; .pdparams -> either
    pdx ckpt convert SRC DST --to hf --config PRESET|config.json [--lora DIR] [--tokenizer DIR]
                                            a pdx llama (LoRA merged) -> a Hugging Face directory
    pdx ckpt reshard SRC DST --mesh fsdp=4  rewrite a step laid out for another mesh
    pdx ckpt diff A B                       per-tensor max-abs and relative difference
    pdx ckpt average DIR STEP... --out DST  mean of the floating tensors of several steps
    pdx ckpt prune DIR --keep N             delete all but the newest N steps

Human-readable tables by default, `--json` for scripts. Exit codes: 0 ok,
1 the check failed (verify found corruption of any kind, diff found a
difference), 2 usage error (bad path, bad arguments).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from pathlib import Path

__all__ = ["configure"]

_FILE_SUFFIXES = (".safetensors", ".pdparams", ".pdopt", ".pdx")


class _UsageError(Exception):
    pass


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the `pdx ckpt` sub-subcommands to `parser`."""
    sub = parser.add_subparsers(dest="ckpt_command", metavar="SUBCOMMAND")

    def add(name, func, help_text):
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.set_defaults(func=_guarded(func))
        p.add_argument("--json", action="store_true", help="machine-readable output")
        return p

    p = add("ls", _ls, "list steps: committed/incomplete, size, time")
    p.add_argument("directory")
    p = add("inspect", _inspect, "show the tree of a step or file: shapes, dtypes, shardings, bytes")
    p.add_argument("path", help="DIR (latest step), DIR/STEP, or a .safetensors/.pdparams file")
    p = add("verify", _verify, "check every file against the sha256 manifest (exit 1 on failure)")
    p.add_argument("path", help="DIR (every committed step) or DIR/STEP")
    p = add("convert", _convert, "convert between checkpoint directories, .safetensors and .pdparams")
    p.add_argument("src", help="DIR, DIR/STEP, .safetensors, or .pdparams")
    p.add_argument("dst", help="a .safetensors file, or a checkpoint DIR")
    p.add_argument("--step", type=int, default=None, help="step number when writing a checkpoint DIR")
    p.add_argument("--to", choices=("pdx", "hf"), default="pdx",
                   help="hf: write a Hugging Face LLaMA/Qwen2/Mistral directory (DST) from a pdx llama checkpoint")
    p.add_argument("--config", default=None, help="--to hf: a LlamaConfig preset name or a Hugging Face config.json")
    p.add_argument("--lora", default=None,
                   help="--to hf: an adapter directory (lora_config.json [+ lora_model.safetensors]) merged into "
                        "the weights; adapters saved in SRC itself are used when present")
    p.add_argument("--tokenizer", default=None, help="--to hf: tokenizer directory or file copied next to the weights")
    p = add("reshard", _reshard, "rewrite a step with shards laid out for another mesh (offline)")
    p.add_argument("src", help="DIR or DIR/STEP")
    p.add_argument("dst", help="output checkpoint DIR")
    p.add_argument("--mesh", required=True, help="mesh axes and sizes, e.g. 'fsdp=4' or 'data=2,fsdp=4'")
    p.add_argument("--rule", choices=("fsdp", "replicate"), default="fsdp",
                   help="fsdp: shard each array's largest divisible dim over the whole mesh; replicate: no sharding")
    p = add("diff", _diff, "per-tensor max-abs and relative difference (exit 1 when they differ)")
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--atol", type=float, default=0.0, help="differences up to this count as equal")
    p = add("average", _average, "average the floating tensors of several steps into a new checkpoint")
    p.add_argument("directory")
    p.add_argument("steps", nargs="+", type=int)
    p.add_argument("--out", required=True, help="output .safetensors file or checkpoint DIR")
    p = add("prune", _prune, "delete all but the newest N committed steps (and incomplete ones)")
    p.add_argument("directory")
    p.add_argument("--keep", type=int, required=True)
    p.add_argument("--dry-run", action="store_true")


def _guarded(func):
    def run(args) -> int:
        from pdx.checkpoint._errors import CheckpointCorruptError, CheckpointError, CheckpointIncompleteError

        try:
            return func(args)
        except _UsageError as e:
            print(f"pdx ckpt {args.ckpt_command}: {e}", file=sys.stderr)
            return 2
        except (CheckpointCorruptError, CheckpointIncompleteError) as e:  # the data failed its check
            print(f"pdx ckpt {args.ckpt_command}: {type(e).__name__}: {e}", file=sys.stderr)
            return 1
        except (CheckpointError, FileNotFoundError, ValueError, KeyError, TypeError) as e:
            print(f"pdx ckpt {args.ckpt_command}: {type(e).__name__}: {e}", file=sys.stderr)
            return 2

    return run


# -- helpers -----------------------------------------------------------------------------------------
def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _table(rows: list[list], header: list[str]) -> str:
    cells = [header] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells)


def _emit(args, payload, text: str) -> None:
    print(json.dumps(payload, indent=1) if args.json else text)


def _is_step_dir(path: Path) -> bool:
    """A step directory (committed or not, damaged or not) rather than a directory of steps."""
    from pdx.checkpoint import _manager, _manifest

    if path.name.endswith(_manager.INCOMPLETE):
        return True
    return any(os.path.lexists(path / name) for name in (_manager.STATE, _manifest.COMMITTED, _manifest.MANIFEST,
                                                          _manifest.META))


def _step_dir(path) -> Path:
    """DIR/STEP as given, or the latest committed step of DIR."""
    from pdx.checkpoint import _manager
    from pdx.checkpoint._manifest import is_committed

    path = Path(path)
    if not path.exists():
        raise _UsageError(f"{path} does not exist")
    if _is_step_dir(path):
        if not is_committed(path):
            from pdx.checkpoint._errors import CheckpointIncompleteError

            raise CheckpointIncompleteError(f"{path} was never committed (interrupted or failed save)")
        return path
    return _manager.step_dir_of(path, None)


def _read_tree(src):
    """(numpy pytree, step) of a checkpoint dir/step (verified first) or a weights file."""
    from pdx.checkpoint import _manager, _manifest
    from pdx.checkpoint._io import load

    src = Path(src)
    if src.is_file():
        return load(src, return_numpy=True), None
    step_dir = _step_dir(src)
    _manifest.verify_step(step_dir)
    return _manager.restore_step(step_dir, as_numpy=True), int(step_dir.name)


def _write_tree(tree, dst, step, *, shardings=None, meta=None) -> None:
    from pdx.checkpoint._io import save
    from pdx.checkpoint._manager import CheckpointManager

    dst = Path(dst)
    if dst.suffix in _FILE_SUFFIXES:
        save(tree, dst)
        return
    if shardings is not None:
        import jax

        tree = jax.tree.map(lambda a, s: jax.device_put(a, s), tree, shardings)
    meta = meta or {}
    with CheckpointManager(dst, async_save=False, handle_sigterm=False) as mgr:
        mgr.save(step if step is not None else 0, tree, force=True,
                 data_state=meta.get("data_state"), metadata=meta.get("metadata"))


def _flat(tree) -> dict:
    import jax

    leaves = jax.tree_util.tree_flatten_with_path(tree)[0]
    return {jax.tree_util.keystr(p, simple=True, separator="/"): v for p, v in leaves}


# -- subcommands ------------------------------------------------------------------------------------
def _ls(args) -> int:
    from pdx.checkpoint import _manager
    from pdx.checkpoint._errors import CheckpointError

    directory = Path(args.directory)
    if not directory.is_dir():
        raise _UsageError(f"{directory} is not a directory")
    rows = []
    for step in _manager.committed_steps(directory):
        d = directory / str(step)
        try:
            meta, status = _manager.read_meta(d), "committed"
        except CheckpointError:  # listed all the same; `pdx ckpt verify` says what is wrong
            meta, status = {}, "damaged"
        rows.append({"step": step, "status": status, "bytes": _dir_bytes(d), "time": meta.get("time"),
                     "path": str(d)})
    for d in _manager.incomplete_dirs(directory):
        mtime = datetime.datetime.fromtimestamp(d.stat().st_mtime, datetime.timezone.utc)
        step = d.name.split(".")[0]
        rows.append({"step": int(step) if step.isdigit() else None, "status": "incomplete",
                     "bytes": _dir_bytes(d), "time": mtime.isoformat(timespec="seconds"), "path": str(d)})
    rows.sort(key=lambda r: (r["step"] is None, r["step"] or 0))
    text = _table([[r["step"], r["status"], _human(r["bytes"]), r["time"]] for r in rows],
                  ["STEP", "STATUS", "SIZE", "TIME (UTC)"]) if rows else f"{directory}: no checkpoints"
    _emit(args, rows, text)
    return 0


def _sharding_text(meta) -> str:
    sharding = getattr(meta, "sharding", None)
    if sharding is None:
        return "-"
    shape = getattr(sharding, "shape", None)
    if shape is not None:  # NamedShardingMetadata
        axes = ",".join(f"{n}={s}" for n, s in zip(sharding.axis_names, list(shape)))
        spec = tuple(sharding.partition_spec)
        return f"mesh({axes}) P{spec}"
    return getattr(sharding, "device_str", type(sharding).__name__)


def _inspect(args) -> int:
    import numpy as np

    path = Path(args.path)
    rows = []
    if path.is_file():
        from pdx.checkpoint._io import load

        tree = _flat(load(path, return_numpy=True))
        for name, value in tree.items():
            if isinstance(value, np.ndarray):
                rows.append({"name": name, "shape": list(value.shape), "dtype": str(value.dtype),
                             "sharding": "-", "bytes": int(value.nbytes)})
        title = str(path)
    else:
        from pdx.checkpoint import _manager, _restore

        step_dir = _step_dir(path)
        saved = _restore.meta_leaves(_restore.saved_tree(_restore.checkpointer(), step_dir / _restore.STATE))
        for name, meta in saved.items():
            shape = list(meta.shape)
            nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(meta.dtype).itemsize
            rows.append({"name": name, "shape": shape, "dtype": str(np.dtype(meta.dtype)),
                         "sharding": _sharding_text(meta), "bytes": nbytes})
        info = _manager.read_meta(step_dir)
        title = f"{step_dir}  (step {step_dir.name}, saved {info.get('time')} on {info.get('device_count')} devices)"
    total = sum(r["bytes"] for r in rows)
    text = "\n".join([title, _table([[r["name"], tuple(r["shape"]), r["dtype"], r["sharding"], _human(r["bytes"])]
                                     for r in rows], ["NAME", "SHAPE", "DTYPE", "SHARDING", "BYTES"]),
                      f"{len(rows)} arrays, {_human(total)}"])
    _emit(args, {"path": str(path), "arrays": rows, "total_bytes": total}, text)
    return 0


def _verify(args) -> int:
    from pdx.checkpoint import _manager, _manifest
    from pdx.checkpoint._errors import CheckpointError

    path = Path(args.path)
    if not path.is_dir():
        raise _UsageError(f"{path} is not a directory")
    skipped = []
    if _is_step_dir(path):
        targets = [path]
    else:  # a whole directory: its committed steps (incomplete ones may be saves in flight)
        targets = [path / str(s) for s in _manager.committed_steps(path)]
        skipped = _manager.incomplete_dirs(path)
        if not targets:
            raise _UsageError(f"{path}: no committed checkpoints to verify")
    results = []
    for d in targets:
        try:
            manifest = _manifest.verify_step(d)
            results.append({"path": str(d), "ok": True, "files": len(manifest["files"]), "error": None})
        except (CheckpointError, OSError) as e:  # OSError: e.g. the step was deleted while being checked
            results.append({"path": str(d), "ok": False, "files": None, "error": f"{type(e).__name__}: {e}"})
    text = "\n".join(f"{'OK  ' if r['ok'] else 'FAIL'}  {r['path']}" + (f"  ({r['files']} files)" if r["ok"] else
                                                                        f"\n      {r['error']}") for r in results)
    text += "".join(f"\nSKIP  {d}  (incomplete: never committed)" for d in skipped)
    _emit(args, {"steps": results, "incomplete": [str(d) for d in skipped]}, text)
    return 0 if all(r["ok"] for r in results) else 1


def _convert(args) -> int:
    if args.to == "hf":
        return _convert_to_hf(args)
    tree, step = _read_tree(args.src)
    _write_tree(tree, args.dst, args.step if args.step is not None else step)
    n = len(_flat(tree))
    _emit(args, {"src": args.src, "dst": args.dst, "arrays": n}, f"wrote {n} arrays to {args.dst}")
    return 0


def _convert_to_hf(args) -> int:
    """A pdx llama (a TrainState checkpoint or a state-dict file; LoRA merged) -> a Hugging Face directory."""
    import os

    from pdx.models.llama import LlamaConfig, LlamaForCausalLM, config_from_hf, save_hf_pretrained

    if args.config is None:
        raise _UsageError("--to hf needs --config (a LlamaConfig preset such as 'tiny', or a config.json)")
    if os.path.isfile(args.config):
        from pdx import _safefile

        raw = _safefile.read_file(args.config, max_bytes=1 << 20, what="config.json", error=_UsageError)
        config = config_from_hf(_safefile.load_json(raw, what=args.config, error=_UsageError))
    else:
        try:
            config = LlamaConfig.from_preset(args.config)
        except ValueError as e:
            raise _UsageError(str(e)) from None
    tree, _ = _read_tree(args.src)
    flat = _flat(tree)
    state = {name: v for key, v in flat.items() for head, _, name in [key.partition("/")]
             if head in ("params", "buffers") and name}
    state = state or flat
    if state and all(k.startswith("model.model.") or k.startswith("model.lm_head") for k in state):
        state = {k[len("model."):]: v for k, v in state.items()}  # saved through a LoRAModel wrapper
    model = LlamaForCausalLM(config)
    if args.lora or any(k.endswith(".lora_A") for k in state):
        from pdx.peft import LoRAConfig, LoRAModel

        if not args.lora:
            raise _UsageError(f"{args.src} holds LoRA adapters: pass --lora ADAPTER_DIR (its lora_config.json "
                              "gives rank and alpha)")
        if any(k.endswith(".lora_A") for k in state):
            from pdx import _safefile

            path = os.path.join(args.lora, "lora_config.json")
            raw = _safefile.read_file(path, max_bytes=1 << 20, what="lora_config.json", error=_UsageError)
            saved = _safefile.load_json(raw, what=path, error=_UsageError)
            saved.pop("adapted", None)
            wrapped = LoRAModel(model, LoRAConfig(**saved))
            _load_exact(wrapped.model, state, args.src)
        else:
            _load_exact(model, state, args.src)
            wrapped = LoRAModel.from_pretrained(model, args.lora)
        model = wrapped.merge()
    else:
        _load_exact(model, state, args.src)
    tokenizer = None
    if args.tokenizer:
        from pdx.text import Tokenizer

        tokenizer = (Tokenizer.from_pretrained(args.tokenizer) if os.path.isdir(args.tokenizer)
                     else Tokenizer.from_file(args.tokenizer))
    save_hf_pretrained(model, args.dst, tokenizer=tokenizer)
    _emit(args, {"src": args.src, "dst": args.dst, "format": "hf", "model_type": config.model_type},
          f"wrote a Hugging Face {config.model_type} directory to {args.dst}")
    return 0


def _load_exact(model, state: dict, src) -> None:
    own = model.state_dict()
    missing = sorted(set(own) - set(state))
    if missing:
        raise _UsageError(f"{src} does not match --config: missing {missing[:4]} (and {max(0, len(missing) - 4)} more); "
                          "pick the config the model was trained with")
    model.set_state_dict({k: state[k] for k in own})


def _parse_mesh(text: str) -> dict[str, int]:
    axes = {}
    for part in text.split(","):
        name, _, size = part.partition("=")
        if not name.strip() or not size.strip().isdigit() or int(size) < 1:
            raise _UsageError(f"--mesh {text!r}: write axes as name=size joined by commas, e.g. 'data=2,fsdp=4'")
        axes[name.strip()] = int(size)
    return axes


def _reshard(args) -> int:
    axes = _parse_mesh(args.mesh)
    n = 1
    for size in axes.values():
        n *= size
    # host CPU devices are virtual: make enough of them before jax starts its backend
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_force_host_platform_device_count" not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={n}".strip()
    import jax
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    if jax.device_count() < n:
        raise _UsageError(f"--mesh {args.mesh!r} needs {n} devices; this process has {jax.device_count()}")
    mesh = Mesh(np.asarray(jax.devices()[:n]).reshape(tuple(axes.values())), tuple(axes))
    tree, step = _read_tree(args.src)
    from pdx.checkpoint._manager import read_meta

    src_meta = read_meta(_step_dir(args.src))

    def layout(a):
        a = np.asarray(a)
        if args.rule == "fsdp" and a.ndim:
            dims = [d for d in np.argsort(a.shape)[::-1] if a.shape[d] % n == 0]
            if dims:
                spec = [None] * a.ndim
                spec[dims[0]] = tuple(axes)
                return NamedSharding(mesh, PartitionSpec(*spec))
        return NamedSharding(mesh, PartitionSpec())

    shardings = jax.tree.map(layout, tree)
    _write_tree(tree, args.dst, step, shardings=shardings, meta=src_meta)
    sharded = sum(1 for s in jax.tree.leaves(shardings, is_leaf=lambda x: isinstance(x, NamedSharding))
                  if any(p is not None for p in s.spec))
    _emit(args, {"dst": args.dst, "step": step, "mesh": axes, "sharded_arrays": sharded},
          f"wrote step {step} to {args.dst} for mesh {axes}: {sharded} arrays sharded, the rest replicated")
    return 0


def _diff(args) -> int:
    import numpy as np

    a, _ = _read_tree(args.a)
    b, _ = _read_tree(args.b)
    fa, fb = _flat(a), _flat(b)
    rows = []
    for name in sorted(set(fa) | set(fb)):
        if name not in fa or name not in fb:
            rows.append({"name": name, "status": f"only in {'A' if name in fa else 'B'}", "max_abs": None, "rel": None})
            continue
        x, y = np.asarray(fa[name]), np.asarray(fb[name])
        if x.shape != y.shape:
            rows.append({"name": name, "status": f"shape {x.shape} vs {y.shape}", "max_abs": None, "rel": None})
            continue
        if x.dtype.kind in "fiub" and y.dtype.kind in "fiub":
            xd, yd = x.astype(np.float64), y.astype(np.float64)
            max_abs = float(np.max(np.abs(xd - yd))) if x.size else 0.0
            scale = float(np.max(np.abs(yd))) if y.size else 0.0
            rel = max_abs / scale if scale else (0.0 if max_abs == 0 else float("inf"))
        else:
            max_abs = 0.0 if np.array_equal(x, y) else float("inf")
            rel = max_abs
        rows.append({"name": name, "status": "equal" if max_abs <= args.atol else "differs",
                     "max_abs": max_abs, "rel": rel})
    differs = [r for r in rows if r["status"] != "equal"]
    text = _table([[r["name"], r["status"], "-" if r["max_abs"] is None else f"{r['max_abs']:.3g}",
                    "-" if r["rel"] is None else f"{r['rel']:.3g}"] for r in rows],
                  ["NAME", "STATUS", "MAX_ABS", "REL"]) + f"\n{len(differs)} of {len(rows)} tensors differ"
    _emit(args, {"tensors": rows, "differ": len(differs)}, text)
    return 1 if differs else 0


def _average(args) -> int:
    import jax
    import numpy as np

    directory = Path(args.directory)
    trees = [_read_tree(directory / str(s))[0] for s in args.steps]
    structures = {jax.tree.structure(t) for t in trees}
    if len(structures) != 1:
        raise _UsageError(f"steps {args.steps} do not share one tree structure; cannot average them")

    def mean(*leaves):
        first = np.asarray(leaves[0])
        if first.dtype.kind != "f":
            return np.asarray(leaves[-1])  # counters, keys: keep the newest
        acc = sum(np.asarray(x, dtype=np.float64) for x in leaves) / len(leaves)
        return acc.astype(first.dtype)

    averaged = jax.tree.map(mean, *trees)
    step = max(args.steps)
    _write_tree(averaged, args.out, step, meta={"metadata": {"averaged_steps": list(args.steps)}})
    _emit(args, {"out": args.out, "steps": args.steps},
          f"wrote the average of steps {args.steps} to {args.out}")
    return 0


def _prune(args) -> int:
    from pdx.checkpoint import _manager

    if args.keep < 0:
        raise _UsageError(f"--keep {args.keep}: needs a non-negative count")
    directory = Path(args.directory)
    if not directory.is_dir():
        raise _UsageError(f"{directory} is not a directory")
    steps = _manager.committed_steps(directory)
    doomed = [directory / str(s) for s in (steps[:-args.keep] if args.keep else steps)]
    doomed += _manager.incomplete_dirs(directory)
    if not args.dry_run:
        for d in doomed:
            _manager.delete_step(d)
    kept = steps[-args.keep:] if args.keep else []
    verb = "would delete" if args.dry_run else "deleted"
    _emit(args, {"deleted": [str(d) for d in doomed], "kept": kept, "dry_run": args.dry_run},
          f"{verb} {len(doomed)} director{'y' if len(doomed) == 1 else 'ies'}; kept steps {kept}")
    return 0
