"""OCR on rendered text: a CRNN recognizer (CTC) and a DB detector, trained and measured, the recognizer exported.

The data is drawn on the fly (`pdx.models.ocr.make_recognition_batch` / `make_detection_batch`):
random strings of digits and lower-case letters, 3-8 long, rendered with Pillow's bundled font
on noisy backgrounds, deterministic from the seed. The test strings are held out (never drawn for
training). The recognizer is scored by greedy and beam-search CTC decoding (character and word
accuracy), the detector by recall and precision at IoU 0.5. The trained recognizer is exported
(`pdx.export`) for XLA, IREE llvm-cpu (this host) and IREE arm64-android; the IREE host module's
logits must equal XLA's within 1e-4.

    python recipes/ocr.py                          # about 5 minutes on an idle 2-core CPU
    python recipes/ocr.py --rec-steps 300 --det-steps 100 --export false   # a quick run
"""

from __future__ import annotations

import dataclasses
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np

import pdx
from pdx.jit import InputSpec
from pdx.models import ocr


@dataclasses.dataclass(frozen=True)
class OCRConfig:
    rec_steps: int = 800           # recognizer training steps (fresh rendered batch each step)
    rec_batch: int = 32
    rec_lr: float = 1e-2           # Adam peak learning rate, cosine-decayed over the run
    det_steps: int = 200           # detector training steps
    det_batch: int = 8
    det_lr: float = 3e-3
    height: int = 32               # text-line height (the recognizer's time steps are width // 4)
    width: int = 128
    scene: int = 128               # detection scenes are scene x scene with 2-4 words
    alphabet: str = ocr.DEFAULT_ALPHABET
    min_len: int = 3
    max_len: int = 8
    test_lines: int = 1000         # held-out strings for the recognizer
    beam_lines: int = 200          # of those, decoded with beam search too
    beam_width: int = 8
    test_scenes: int = 100
    box_thresh: float = 0.3        # lowest mean probability of a detected box (a short run's maps are soft)
    export: bool = True            # export the recognizer, run XLA and IREE, compare
    seed: int = 0


def _cosine(lr: float, steps: int):
    return pdx.optimizer.lr.CosineAnnealingDecay(lr, T_max=max(steps, 1), eta_min=lr * 0.02)


def train(model, loss_fn, batches, *, steps: int, lr: float, label: str):
    """Adam on a cosine schedule; `batches(step)` gives the arrays of one step. Returns (first, last) loss."""
    schedule = _cosine(lr, steps)
    opt = pdx.optimizer.Adam(learning_rate=schedule, parameters=model.parameters(),
                             grad_clip=pdx.nn.ClipGradByGlobalNorm(5.0))

    @pdx.jit
    def step(model, opt, *arrays):
        loss, grads = pdx.value_and_grad(loss_fn)(model, *arrays)
        opt.step(grads)
        schedule.step()
        return loss

    model.train()
    losses, start = [], time.perf_counter()
    for i in range(steps):
        losses.append(step(model, opt, *batches(i)))
        if (i + 1) % 100 == 0:
            print(f"{label} step {i + 1}/{steps}: loss {float(losses[-1]):.4f} "
                  f"({time.perf_counter() - start:.0f} s)", flush=True)
    model.eval()
    return float(np.mean(jax.device_get(losses[:5]))), float(np.mean(jax.device_get(losses[-20:])))


def _logits(model, images, batch: int = 250):
    run = pdx.jit(lambda m, x: m(x))
    return np.concatenate([np.asarray(run(model, images[i:i + batch])) for i in range(0, len(images), batch)])


def recognize(model, cfg: OCRConfig, test) -> dict:
    logits = _logits(model, test.images)
    greedy = [ocr.decode_ids(ids, alphabet=cfg.alphabet) for ids in ocr.ctc_greedy_decode(logits)]
    log_probs = np.asarray(jax.nn.log_softmax(jnp.asarray(logits[:cfg.beam_lines]), axis=-1))
    beams = ocr.ctc_beam_search_decode(log_probs, beam_width=cfg.beam_width, prune_logp=np.log(1e-4))
    beam = [ocr.decode_ids(b[0][0], alphabet=cfg.alphabet) for b in beams]
    return {"greedy": ocr.recognition_metrics(greedy, test.texts),
            "greedy_subset": ocr.recognition_metrics(greedy[:cfg.beam_lines], test.texts[:cfg.beam_lines]),
            "beam_subset": ocr.recognition_metrics(beam, test.texts[:cfg.beam_lines]),
            "examples": list(zip(test.texts[:5], greedy[:5]))}


def detect(model, cfg: OCRConfig, test) -> ocr.DetectionMetrics:
    maps = _logits(model, test.images, batch=50)
    predictions = [ocr.boxes_from_prob_map(m[0], box_thresh=cfg.box_thresh)[0] for m in maps]
    return ocr.detection_metrics(predictions, test.boxes, iou_threshold=0.5)


def export_recognizer(model, cfg: OCRConfig, images) -> dict:
    """Export for XLA + IREE (host and arm64-android); max |IREE - XLA| over `images` at batch 1."""
    spec = [InputSpec([None, 1, cfg.height, cfg.width], "float32", "image")]
    targets = ("xla", "iree-llvm-cpu", "iree-arm64-android")
    with tempfile.TemporaryDirectory() as workdir:
        path = pdx.export.export(model, f"{workdir}/crnn", spec, targets=targets, iree={"batch_split": True},
                                 differentiable=False, output_names=["logits"])
        xla = pdx.export.load(path, runtime="xla")
        iree = pdx.export.load(path, runtime="iree")
        out_xla = np.asarray(xla(images))
        out_iree = np.asarray(iree(images))
        direct = _logits(model, images)
    same_text = ocr.ctc_greedy_decode(out_iree) == ocr.ctc_greedy_decode(out_xla)
    return {"targets": targets, "max_abs_diff": float(np.max(np.abs(out_iree - out_xla))),
            "xla_vs_model": float(np.max(np.abs(out_xla - direct))), "same_text": same_text}


def main(cfg: OCRConfig) -> dict:
    t0 = time.perf_counter()
    kw = dict(height=cfg.height, width=cfg.width, alphabet=cfg.alphabet, min_len=cfg.min_len, max_len=cfg.max_len)
    test_lines = ocr.make_recognition_batch(cfg.test_lines, seed=(cfg.seed, 0), **kw)
    held_out = frozenset(test_lines.texts)

    def rec_batch(i):
        b = ocr.make_recognition_batch(cfg.rec_batch, seed=(cfg.seed, 1, i), exclude=held_out, **kw)
        return b.images, b.labels, b.lengths

    recognizer = pdx.models.create("crnn-tiny", num_classes=len(cfg.alphabet) + 1, rngs=cfg.seed)
    rec_loss = train(recognizer, lambda m, x, y, n: m.loss(x, y, n), rec_batch, steps=cfg.rec_steps,
                     lr=cfg.rec_lr, label="recognizer")
    t_rec = time.perf_counter()
    rec = recognize(recognizer, cfg, test_lines)

    size = cfg.scene

    def det_batch(i):
        b = ocr.make_detection_batch(cfg.det_batch, seed=(cfg.seed, 2, i), height=size, width=size,
                                     alphabet=cfg.alphabet)
        return (b.images, *ocr.stack_targets(b.boxes, height=size, width=size))

    detector = pdx.models.create("db-tiny", rngs=cfg.seed + 1)
    det_loss = train(detector, lambda m, x, *t: ocr.db_loss(m(x), *t)[0], det_batch, steps=cfg.det_steps,
                     lr=cfg.det_lr, label="detector")
    t_det = time.perf_counter()
    det = detect(detector, cfg, ocr.make_detection_batch(cfg.test_scenes, seed=(cfg.seed, 3), height=size,
                                                          width=size, alphabet=cfg.alphabet))
    exported = export_recognizer(recognizer, cfg, test_lines.images[:16]) if cfg.export else None
    t_end = time.perf_counter()

    results = {"recognition": rec, "detection": det, "export": exported,
               "losses": {"recognizer": rec_loss, "detector": det_loss},
               "seconds": {"recognizer": t_rec - t0, "detector": t_det - t_rec, "total": t_end - t0}}
    g, gs, bs = rec["greedy"], rec["greedy_subset"], rec["beam_subset"]
    print(f"\nOCR on rendered text: {cfg.height}x{cfg.width} lines ({len(cfg.alphabet)} characters, "
          f"length {cfg.min_len}-{cfg.max_len}), {size}x{size} scenes")
    print("| model | metric | value |\n|---|---|---:|")
    print(f"| CRNN ({cfg.rec_steps} steps x {cfg.rec_batch}) | char accuracy, greedy ({g.count} held-out) "
          f"| {g.char_accuracy:.4f} |")
    print(f"| | word accuracy, greedy ({g.count} held-out) | {g.word_accuracy:.4f} |")
    print(f"| | word accuracy, greedy / beam {cfg.beam_width} (first {bs.count}) "
          f"| {gs.word_accuracy:.4f} / {bs.word_accuracy:.4f} |")
    print(f"| | CTC loss first / last | {rec_loss[0]:.3f} / {rec_loss[1]:.3f} |")
    print(f"| DB ({cfg.det_steps} steps x {cfg.det_batch}) | recall at IoU 0.5 ({det.ground_truth} words) "
          f"| {det.recall:.4f} |")
    print(f"| | precision at IoU 0.5 ({det.detections} boxes) | {det.precision:.4f} |")
    print(f"| | DB loss first / last | {det_loss[0]:.3f} / {det_loss[1]:.3f} |")
    if exported:
        print(f"| CRNN export | max abs IREE llvm-cpu - XLA ({', '.join(exported['targets'])}) "
              f"| {exported['max_abs_diff']:.2e} |")
    print(f"| time | recognizer / detector / total s | {results['seconds']['recognizer']:.0f} / "
          f"{results['seconds']['detector']:.0f} / {results['seconds']['total']:.0f} |")
    print("examples (truth -> read):", ", ".join(f"{t} -> {p}" for t, p in rec["examples"]))
    return results


if __name__ == "__main__":
    from _config_cli import parse_config  # recipes/ is sys.path[0] when a recipe runs

    main(parse_config(OCRConfig, __doc__))
