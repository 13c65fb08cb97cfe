"""One training step, four frameworks, side by side.

Runs the same model, batch and optimizer in

  pdx     pdx.nn layers, pdx.optimizer, `@pdx.jit` over
          `pdx.value_and_grad(loss_fn)(model, x, y)` + `opt.step(grads)`
  jax     flax.nnx modules split once (`nnx.split`) + optax, the step a plain
          `jax.jit` over (params, state, opt_state, batch): the fastest
          idiomatic hand-written JAX, no per-call graph walk
  torch   PyTorch eager (torch.optim)
  paddle  Paddle dygraph (paddle.optimizer)

and prints median ms/step (after warm-up) with the ratios pdx / jax, pdx /
torch and pdx / paddle. Benchmarks:

  gpt       GPT-mini: 4 pre-LN decoder layers, d_model 256, 4 heads, seq 128,
            batch 8, vocab 4096, learned positions, causal attention, GELU MLP
            (4x), untied LM head, mean token cross-entropy, AdamW(3e-4, wd 0.01)
  resnet    ResNet-18, CIFAR stem (3x3 conv, no max-pool), 32x32 inputs, 10
            classes, batch 32, BatchNorm in training mode, Momentum(0.1, 0.9)
  overhead  per-call cost on a tiny MLP (32 -> 32 -> 32, batch 8): forward
            through `pdx.jit` vs `jax.jit` over a params pytree (and
            `nnx.jit` for reference), and a full tiny train step

Usage:
  python benchmarks/train_step.py                      # everything (~5 min on an idle 2-core CPU)
  python benchmarks/train_step.py --only gpt --frameworks pdx,jax --steps 10
  python benchmarks/train_step.py --only gpt,resnet --frameworks pdx,jax,torch --bf16   # + bf16 rows
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import math
import os
import platform
import statistics
import sys
import time
import warnings
from collections.abc import Callable

import numpy as np

FRAMEWORKS = ("pdx", "jax", "torch", "paddle")
BENCHMARKS = ("gpt", "resnet", "overhead")
TARGET_VS_JAX = 1.03  # training steps: pdx / hand-written JAX
TARGET_OVERHEAD = 1.2  # tiny-MLP call: pdx.jit / jax.jit
TARGET_VS_TORCH = 1.0  # training steps: pdx / PyTorch eager, fp32


# --------------------------------------------------------------------------------------
# Configuration and data
# --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class GPTConfig:
    """GPT-mini shapes and optimizer."""

    vocab: int = 4096  # vocabulary size (embedding rows, LM-head columns)
    seq: int = 128  # tokens per sequence (= learned position table rows)
    batch: int = 8  # sequences per step
    d_model: int = 256  # residual width
    heads: int = 4  # attention heads (head_dim = d_model // heads)
    layers: int = 4  # decoder blocks
    mlp_ratio: int = 4  # MLP hidden = mlp_ratio * d_model
    lr: float = 3e-4  # AdamW learning rate
    weight_decay: float = 0.01  # AdamW decoupled weight decay
    eps: float = 1e-5  # LayerNorm epsilon (Paddle's and PyTorch's default)

    @property
    def head_dim(self) -> int:
        return self.d_model // self.heads


@dataclasses.dataclass(frozen=True)
class ResNetConfig:
    """ResNet-18 (CIFAR variant) shapes and optimizer."""

    batch: int = 32  # images per step
    image: int = 32  # height = width
    classes: int = 10  # output classes
    widths: tuple = (64, 128, 256, 512)  # channels of the four stages
    blocks: tuple = (2, 2, 2, 2)  # BasicBlocks per stage (ResNet-18)
    lr: float = 0.1  # Momentum learning rate
    momentum: float = 0.9  # Momentum coefficient
    bn_momentum: float = 0.9  # running = m * running + (1 - m) * batch (Paddle's convention)
    bn_eps: float = 1e-5


@dataclasses.dataclass(frozen=True)
class MLPConfig:
    """Tiny MLP of the per-call overhead benchmark."""

    batch: int = 8
    width: int = 32  # in = hidden = out
    lr: float = 1e-3


def gpt_batch(cfg: GPTConfig, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Random token ids and next-token targets, int64 [batch, seq] (numpy, fixed seed)."""
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, cfg.vocab, size=(cfg.batch, cfg.seq + 1), dtype=np.int64)
    return tokens[:, :-1].copy(), tokens[:, 1:].copy()


def resnet_batch(cfg: ResNetConfig, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Random NCHW float32 images and int64 labels (numpy, fixed seed)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((cfg.batch, 3, cfg.image, cfg.image), dtype=np.float32)
    y = rng.integers(0, cfg.classes, size=(cfg.batch,), dtype=np.int64)
    return x, y


def mlp_batch(cfg: MLPConfig, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((cfg.batch, cfg.width), dtype=np.float32)
    y = rng.standard_normal((cfg.batch, cfg.width), dtype=np.float32)
    return x, y


def expected_gpt_params(cfg: GPTConfig) -> int:
    d, h = cfg.d_model, cfg.mlp_ratio * cfg.d_model
    block = 2 * 2 * d + (d * 3 * d + 3 * d) + (d * d + d) + (d * h + h) + (h * d + d)
    return cfg.vocab * d + cfg.seq * d + cfg.layers * block + 2 * d + d * cfg.vocab


def expected_resnet_params(cfg: ResNetConfig) -> int:
    total = 3 * 9 * cfg.widths[0] + 2 * cfg.widths[0]
    cin = cfg.widths[0]
    for stage, (width, n) in enumerate(zip(cfg.widths, cfg.blocks)):
        for b in range(n):
            total += cin * 9 * width + 2 * width + width * 9 * width + 2 * width
            if b == 0 and stage > 0:  # projection shortcut: 1x1 conv + BN
                total += cin * width + 2 * width
            cin = width
    return total + cin * cfg.classes + cfg.classes


# --------------------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------------------


@dataclasses.dataclass
class Result:
    bench: str
    framework: str
    params: int | None = None
    compile_s: float | None = None  # first call (trace + compile + one step), JAX-based only
    times_s: list = dataclasses.field(default_factory=list)
    first_loss: float | None = None
    last_loss: float | None = None
    unit: str = "ms"
    error: str | None = None

    @property
    def median(self) -> float | None:
        return statistics.median(self.times_s) if self.times_s else None


def round_robin(cases: dict, run_one: Callable, *, rounds: int, budget_s: float = math.inf,
                min_rounds: int = 5) -> dict:
    """Time every case once per round, in turn, reversing the order every other
    round, so that the cases see the same background load and none always runs
    right after another (a shared machine slows everything; interleaving keeps
    the ratios honest even when absolute numbers move).

    Args:
      cases: {name: case}; `run_one(case)` runs and returns seconds taken.
      rounds: how many rounds at most.
      budget_s: stop after `min_rounds` rounds once some case spent this long
        (all cases keep the same number of timings).

    Returns:
      {name: [seconds per round]}.
    """
    times = {name: [] for name in cases}
    order = list(cases)
    for i in range(rounds):
        if i >= min_rounds and max(sum(t) for t in times.values()) > budget_s:
            break
        for name in order if i % 2 == 0 else reversed(order):
            times[name].append(run_one(cases[name]))
    return times


def settle() -> None:
    """Let the thread pools of the eager frameworks go idle before timing other
    work: OpenMP workers spin for a while after each parallel region (Intel
    OpenMP's KMP_BLOCKTIME defaults to 200 ms), stealing cores from whatever
    runs next."""
    time.sleep(0.5)


def _timed_calls(call: Callable[[], object], block: Callable[[object], object], calls: int) -> float:
    """Seconds per call over `calls` back-to-back calls (dispatch is asynchronous;
    the round ends by blocking on the last result)."""
    t0 = time.perf_counter()
    for _ in range(calls):
        out = call()
    block(out)
    return (time.perf_counter() - t0) / calls


# --------------------------------------------------------------------------------------
# (b) hand-written JAX: flax.nnx modules + optax, split once, plain jax.jit
# --------------------------------------------------------------------------------------


def _jax_gpt_model(cfg: GPTConfig):
    import jax
    import jax.numpy as jnp
    from flax import nnx

    class Block(nnx.Module):
        def __init__(self, rngs: nnx.Rngs):
            d, h = cfg.d_model, cfg.mlp_ratio * cfg.d_model
            self.ln1 = nnx.LayerNorm(d, epsilon=cfg.eps, rngs=rngs)
            self.qkv = nnx.Linear(d, 3 * d, rngs=rngs)
            self.proj = nnx.Linear(d, d, rngs=rngs)
            self.ln2 = nnx.LayerNorm(d, epsilon=cfg.eps, rngs=rngs)
            self.fc1 = nnx.Linear(d, h, rngs=rngs)
            self.fc2 = nnx.Linear(h, d, rngs=rngs)

        def __call__(self, x):
            b, t, d = x.shape
            qkv = self.qkv(self.ln1(x)).reshape(b, t, 3, cfg.heads, cfg.head_dim)
            q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]  # (B, T, H, Dh)
            attn = jax.nn.dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(attn.reshape(b, t, d))
            return x + self.fc2(jax.nn.gelu(self.fc1(self.ln2(x)), approximate=False))

    class GPT(nnx.Module):
        def __init__(self, rngs: nnx.Rngs):
            self.tok = nnx.Embed(cfg.vocab, cfg.d_model, rngs=rngs)
            self.pos = nnx.Embed(cfg.seq, cfg.d_model, rngs=rngs)
            self.blocks = nnx.List([Block(rngs) for _ in range(cfg.layers)])
            self.ln_f = nnx.LayerNorm(cfg.d_model, epsilon=cfg.eps, rngs=rngs)
            self.head = nnx.Linear(cfg.d_model, cfg.vocab, use_bias=False, rngs=rngs)

        def __call__(self, tokens):
            x = self.tok(tokens) + self.pos(jnp.arange(tokens.shape[1]))
            for block in self.blocks:
                x = block(x)
            return self.head(self.ln_f(x))

    return GPT(nnx.Rngs(0))


def _jax_resnet_model(cfg: ResNetConfig):
    import jax
    from flax import nnx

    def bn(c, rngs):
        return nnx.BatchNorm(c, momentum=cfg.bn_momentum, epsilon=cfg.bn_eps, rngs=rngs)

    def conv(cin, cout, k, stride, rngs):
        return nnx.Conv(cin, cout, (k, k), strides=stride, padding=k // 2, use_bias=False, rngs=rngs)

    class BasicBlock(nnx.Module):
        def __init__(self, cin, cout, stride, rngs):
            self.conv1, self.bn1 = conv(cin, cout, 3, stride, rngs), bn(cout, rngs)
            self.conv2, self.bn2 = conv(cout, cout, 3, 1, rngs), bn(cout, rngs)
            # projection shortcut only where the shape changes (one assignment: nnx fixes
            # an attribute's data/static status when it is first set)
            project = stride != 1 or cin != cout
            self.short = nnx.Sequential(conv(cin, cout, 1, stride, rngs), bn(cout, rngs)) if project else None

        def __call__(self, x):
            out = jax.nn.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return jax.nn.relu(out + (x if self.short is None else self.short(x)))

    class ResNet(nnx.Module):
        def __init__(self, rngs: nnx.Rngs):
            self.conv1, self.bn1 = conv(3, cfg.widths[0], 3, 1, rngs), bn(cfg.widths[0], rngs)
            blocks, cin = [], cfg.widths[0]
            for stage, (width, n) in enumerate(zip(cfg.widths, cfg.blocks)):
                for b in range(n):
                    blocks.append(BasicBlock(cin, width, 2 if b == 0 and stage > 0 else 1, rngs))
                    cin = width
            self.blocks = nnx.List(blocks)
            self.fc = nnx.Linear(cin, cfg.classes, rngs=rngs)

        def __call__(self, x):  # x: (B, H, W, C), flax's layout
            x = jax.nn.relu(self.bn1(self.conv1(x)))
            for block in self.blocks:
                x = block(x)
            return self.fc(x.mean(axis=(1, 2)))

    return ResNet(nnx.Rngs(0))


def _jax_step(model, tx, loss_of_logits, *, donate: bool):
    """The hand-written step: split once here, merge only inside the trace."""
    import jax
    import optax
    from flax import nnx

    graphdef, params, rest = nnx.split(model, nnx.Param, ...)

    def loss_fn(params, rest, x, y):
        m = nnx.merge(graphdef, params, rest, copy=True)
        loss = loss_of_logits(m(x), y)
        return loss, nnx.state(m, nnx.Not(nnx.Param))  # BatchNorm statistics

    @functools.partial(jax.jit, donate_argnums=(0, 1, 2) if donate else ())
    def step(params, rest, opt_state, x, y):
        (loss, rest), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, rest, x, y)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), rest, opt_state, loss

    nparams = sum(p.size for p in jax.tree.leaves(params))
    return step, params, rest, tx.init(params), nparams


def _advance(step, state: list, x, y) -> float:
    """Call a pure step on `state` (updated in place) and block on its loss."""
    import jax

    *new, loss = step(*state, x, y)
    state[:] = new
    return float(jax.block_until_ready(loss))


def _jax_cross_entropy(logits, y):
    import optax

    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()


def jax_gpt(cfg: GPTConfig, data, *, donate: bool):
    import jax.numpy as jnp
    import optax

    tx = optax.adamw(cfg.lr, weight_decay=cfg.weight_decay)
    step, *state, nparams = _jax_step(_jax_gpt_model(cfg), tx, _jax_cross_entropy, donate=donate)
    x, y = (jnp.asarray(a, jnp.int32) for a in data)
    return functools.partial(_advance, step, state, x, y), nparams


def jax_resnet(cfg: ResNetConfig, data, *, donate: bool):
    import jax.numpy as jnp
    import optax

    tx = optax.sgd(cfg.lr, momentum=cfg.momentum)
    step, *state, nparams = _jax_step(_jax_resnet_model(cfg), tx, _jax_cross_entropy, donate=donate)
    x = jnp.asarray(data[0].transpose(0, 2, 3, 1))  # flax convolutions are NHWC
    y = jnp.asarray(data[1], jnp.int32)
    return functools.partial(_advance, step, state, x, y), nparams


# --------------------------------------------------------------------------------------
# (c) PyTorch eager
# --------------------------------------------------------------------------------------


def _torch_models(gpt: GPTConfig, res: ResNetConfig):
    import torch
    from torch import nn
    from torch.nn import functional as F

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            d, h = gpt.d_model, gpt.mlp_ratio * gpt.d_model
            self.ln1, self.qkv, self.proj = nn.LayerNorm(d, eps=gpt.eps), nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.ln2, self.fc1, self.fc2 = nn.LayerNorm(d, eps=gpt.eps), nn.Linear(d, h), nn.Linear(h, d)

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, gpt.heads, gpt.head_dim).unbind(2)
            # torch's attention wants (B, H, T, Dh)
            attn = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                                  is_causal=True)
            x = x + self.proj(attn.transpose(1, 2).reshape(b, t, d))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(gpt.vocab, gpt.d_model), nn.Embedding(gpt.seq, gpt.d_model)
            self.blocks = nn.ModuleList([Block() for _ in range(gpt.layers)])
            self.ln_f = nn.LayerNorm(gpt.d_model, eps=gpt.eps)
            self.head = nn.Linear(gpt.d_model, gpt.vocab, bias=False)

        def forward(self, tokens):
            x = self.tok(tokens) + self.pos(torch.arange(tokens.shape[1]))
            for block in self.blocks:
                x = block(x)
            return self.head(self.ln_f(x))

    def bn(c):  # torch's momentum weighs the new batch: 1 - Paddle's
        return nn.BatchNorm2d(c, momentum=1 - res.bn_momentum, eps=res.bn_eps)

    def conv(cin, cout, k, stride):
        return nn.Conv2d(cin, cout, k, stride=stride, padding=k // 2, bias=False)

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1, self.bn1 = conv(cin, cout, 3, stride), bn(cout)
            self.conv2, self.bn2 = conv(cout, cout, 3, 1), bn(cout)
            self.short = None
            if stride != 1 or cin != cout:
                self.short = nn.Sequential(conv(cin, cout, 1, stride), bn(cout))

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return F.relu(out + (x if self.short is None else self.short(x)))

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.bn1 = conv(3, res.widths[0], 3, 1), bn(res.widths[0])
            blocks, cin = [], res.widths[0]
            for stage, (width, n) in enumerate(zip(res.widths, res.blocks)):
                for b in range(n):
                    blocks.append(BasicBlock(cin, width, 2 if b == 0 and stage > 0 else 1))
                    cin = width
            self.blocks = nn.Sequential(*blocks)
            self.fc = nn.Linear(cin, res.classes)

        def forward(self, x):
            x = self.blocks(F.relu(self.bn1(self.conv1(x))))
            return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))

    return GPT, ResNet


def _torch_step(model, opt, x, y, bf16: bool = False):
    import contextlib

    import torch
    import torch.nn.functional as F

    def run() -> float:
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext():
            logits = model(x)
        loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), y.reshape(-1))
        loss.backward()
        opt.step()
        return loss.item()

    return run, sum(p.numel() for p in model.parameters() if p.requires_grad)


def torch_gpt(cfg: GPTConfig, data, threads: int, bf16: bool = False):
    import torch

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = _torch_models(cfg, ResNetConfig())[0]().train()
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    return _torch_step(model, opt, *(torch.from_numpy(a) for a in data), bf16=bf16)


def torch_resnet(cfg: ResNetConfig, data, threads: int, bf16: bool = False):
    import torch

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = _torch_models(GPTConfig(), cfg)[1]().train()
    opt = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=cfg.momentum)
    return _torch_step(model, opt, *(torch.from_numpy(a) for a in data), bf16=bf16)


# --------------------------------------------------------------------------------------
# (d) Paddle dygraph
# --------------------------------------------------------------------------------------


def _paddle_models(gpt: GPTConfig, res: ResNetConfig):
    import paddle
    from paddle import nn
    from paddle.nn import functional as F

    class Block(nn.Layer):
        def __init__(self):
            super().__init__()
            d, h = gpt.d_model, gpt.mlp_ratio * gpt.d_model
            self.ln1, self.qkv = nn.LayerNorm(d, epsilon=gpt.eps), nn.Linear(d, 3 * d)
            self.proj, self.ln2 = nn.Linear(d, d), nn.LayerNorm(d, epsilon=gpt.eps)
            self.fc1, self.fc2 = nn.Linear(d, h), nn.Linear(h, d)

        def forward(self, x):
            b, t, d = x.shape
            qkv = self.qkv(self.ln1(x)).reshape([b, t, 3, gpt.heads, gpt.head_dim])
            q, k, v = paddle.unbind(qkv, axis=2)  # (B, T, H, Dh), Paddle's attention layout
            attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(attn.reshape([b, t, d]))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))

    class GPT(nn.Layer):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(gpt.vocab, gpt.d_model), nn.Embedding(gpt.seq, gpt.d_model)
            self.blocks = nn.LayerList([Block() for _ in range(gpt.layers)])
            self.ln_f = nn.LayerNorm(gpt.d_model, epsilon=gpt.eps)
            self.head = nn.Linear(gpt.d_model, gpt.vocab, bias_attr=False)

        def forward(self, tokens):
            x = self.tok(tokens) + self.pos(paddle.arange(tokens.shape[1]))
            for block in self.blocks:
                x = block(x)
            return self.head(self.ln_f(x))

    def bn(c):
        return nn.BatchNorm2D(c, momentum=res.bn_momentum, epsilon=res.bn_eps)

    def conv(cin, cout, k, stride):
        return nn.Conv2D(cin, cout, k, stride=stride, padding=k // 2, bias_attr=False)

    class BasicBlock(nn.Layer):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1, self.bn1 = conv(cin, cout, 3, stride), bn(cout)
            self.conv2, self.bn2 = conv(cout, cout, 3, 1), bn(cout)
            self.short = None
            if stride != 1 or cin != cout:
                self.short = nn.Sequential(conv(cin, cout, 1, stride), bn(cout))

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return F.relu(out + (x if self.short is None else self.short(x)))

    class ResNet(nn.Layer):
        def __init__(self):
            super().__init__()
            self.conv1, self.bn1 = conv(3, res.widths[0], 3, 1), bn(res.widths[0])
            blocks, cin = [], res.widths[0]
            for stage, (width, n) in enumerate(zip(res.widths, res.blocks)):
                for b in range(n):
                    blocks.append(BasicBlock(cin, width, 2 if b == 0 and stage > 0 else 1))
                    cin = width
            self.blocks = nn.Sequential(*blocks)
            self.pool = nn.AdaptiveAvgPool2D(1)
            self.fc = nn.Linear(cin, res.classes)

        def forward(self, x):
            x = self.blocks(F.relu(self.bn1(self.conv1(x))))
            return self.fc(paddle.flatten(self.pool(x), 1))

    return GPT, ResNet


def _paddle_step(model, opt, x, y):
    import paddle.nn.functional as F

    def run() -> float:
        logits = model(x)
        loss = F.cross_entropy(logits.reshape([-1, logits.shape[-1]]), y.reshape([-1]))
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss.item()

    # BatchNorm running statistics are parameters with stop_gradient in Paddle
    return run, sum(int(np.prod(p.shape)) for p in model.parameters() if not p.stop_gradient)


def _paddle_setup(threads: int):
    import paddle

    paddle.set_device("cpu")
    paddle.base.core.set_num_threads(threads)
    paddle.seed(0)
    return paddle


def paddle_gpt(cfg: GPTConfig, data, threads: int):
    paddle = _paddle_setup(threads)
    model = _paddle_models(cfg, ResNetConfig())[0]()
    model.train()
    opt = paddle.optimizer.AdamW(learning_rate=cfg.lr, parameters=model.parameters(),
                                 weight_decay=cfg.weight_decay)
    return _paddle_step(model, opt, *(paddle.to_tensor(a) for a in data))


def paddle_resnet(cfg: ResNetConfig, data, threads: int):
    paddle = _paddle_setup(threads)
    model = _paddle_models(GPTConfig(), cfg)[1]()
    model.train()
    opt = paddle.optimizer.Momentum(learning_rate=cfg.lr, momentum=cfg.momentum,
                                    parameters=model.parameters())
    return _paddle_step(model, opt, *(paddle.to_tensor(a) for a in data))


# --------------------------------------------------------------------------------------
# (a) pdx: pdx.nn layers, pdx.optimizer, @pdx.jit over value_and_grad + opt.step
# --------------------------------------------------------------------------------------


def _pdx_models(gpt: GPTConfig, res: ResNetConfig, data_format: str):
    import pdx
    from pdx import nn
    from pdx.nn import functional as F

    class Block(nn.Layer):
        def __init__(self):
            super().__init__()
            d, h = gpt.d_model, gpt.mlp_ratio * gpt.d_model
            self.ln1, self.qkv = nn.LayerNorm(d, epsilon=gpt.eps), nn.Linear(d, 3 * d)
            self.proj, self.ln2 = nn.Linear(d, d), nn.LayerNorm(d, epsilon=gpt.eps)
            self.fc1, self.fc2 = nn.Linear(d, h), nn.Linear(h, d)

        def forward(self, x):
            b, t, d = x.shape
            qkv = pdx.reshape(self.qkv(self.ln1(x)), [b, t, 3, gpt.heads, gpt.head_dim])
            q, k, v = pdx.unbind(qkv, axis=2)  # (B, T, H, Dh)
            attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(pdx.reshape(attn, [b, t, d]))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))

    class GPT(nn.Layer):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(gpt.vocab, gpt.d_model), nn.Embedding(gpt.seq, gpt.d_model)
            self.blocks = nn.LayerList([Block() for _ in range(gpt.layers)])
            self.ln_f = nn.LayerNorm(gpt.d_model, epsilon=gpt.eps)
            self.head = nn.Linear(gpt.d_model, gpt.vocab, bias_attr=False)

        def forward(self, tokens):
            x = self.tok(tokens) + self.pos(pdx.arange(tokens.shape[1]))
            for block in self.blocks:
                x = block(x)
            return self.head(self.ln_f(x))

    def bn(c):
        return nn.BatchNorm2D(c, momentum=res.bn_momentum, epsilon=res.bn_eps, data_format=data_format)

    def conv(cin, cout, k, stride):
        return nn.Conv2D(cin, cout, k, stride=stride, padding=k // 2, bias_attr=False, data_format=data_format)

    class BasicBlock(nn.Layer):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1, self.bn1 = conv(cin, cout, 3, stride), bn(cout)
            self.conv2, self.bn2 = conv(cout, cout, 3, 1), bn(cout)
            project = stride != 1 or cin != cout
            self.short = nn.Sequential(conv(cin, cout, 1, stride), bn(cout)) if project else None

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return F.relu(out + (x if self.short is None else self.short(x)))

    class ResNet(nn.Layer):
        def __init__(self):
            super().__init__()
            self.conv1, self.bn1 = conv(3, res.widths[0], 3, 1), bn(res.widths[0])
            blocks, cin = [], res.widths[0]
            for stage, (width, n) in enumerate(zip(res.widths, res.blocks)):
                for b in range(n):
                    blocks.append(BasicBlock(cin, width, 2 if b == 0 and stage > 0 else 1))
                    cin = width
            self.blocks = nn.Sequential(*blocks)
            self.pool = nn.AdaptiveAvgPool2D(1, data_format=data_format)
            self.fc = nn.Linear(cin, res.classes)

        def forward(self, x):
            x = self.blocks(F.relu(self.bn1(self.conv1(x))))
            return self.fc(pdx.flatten(self.pool(x), 1))

    return GPT, ResNet


def _pdx_cross_entropy(model, x, y):
    from pdx.nn import functional as F

    logits = model(x)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


def _pdx_step(model, opt, x, y, *, donate: bool, bf16: bool = False):
    """The step exactly as a pdx user writes it (`bf16`: under pdx.amp.auto_cast, O1)."""
    import jax
    import pdx

    def loss_fn(model, x, y):
        if not bf16:
            return _pdx_cross_entropy(model, x, y)
        with pdx.amp.auto_cast(dtype="bfloat16"):
            return _pdx_cross_entropy(model, x, y)

    @pdx.jit(donate_state=donate)
    def train_step(model, opt, x, y):
        loss, grads = pdx.value_and_grad(loss_fn)(model, x, y)
        opt.step(grads)
        return loss

    def run() -> float:
        return float(jax.block_until_ready(train_step(model, opt, x, y)))

    def trainable(p) -> bool:  # what pdx.value_and_grad differentiates
        meta = p.get_metadata()
        return meta.get("trainable", True) and not meta.get("stop_gradient", False)

    return run, sum(int(p.get_value().size) for p in model.parameters() if trainable(p))


def pdx_gpt(cfg: GPTConfig, data, *, donate: bool, bf16: bool = False):
    import jax.numpy as jnp
    import pdx

    pdx.seed(0)
    model = _pdx_models(cfg, ResNetConfig(), "NCHW")[0]()
    opt = pdx.optimizer.AdamW(learning_rate=cfg.lr, parameters=model.parameters(), weight_decay=cfg.weight_decay)
    x, y = (jnp.asarray(a, jnp.int32) for a in data)
    return _pdx_step(model, opt, x, y, donate=donate, bf16=bf16)


def pdx_resnet(cfg: ResNetConfig, data, *, donate: bool, data_format: str = "NCHW", bf16: bool = False):
    import jax.numpy as jnp
    import pdx

    pdx.seed(0)
    model = _pdx_models(GPTConfig(), cfg, data_format)[1]()
    model.train()
    opt = pdx.optimizer.Momentum(learning_rate=cfg.lr, momentum=cfg.momentum, parameters=model.parameters())
    x = data[0] if data_format == "NCHW" else data[0].transpose(0, 2, 3, 1)
    return _pdx_step(model, opt, jnp.asarray(x), jnp.asarray(data[1], jnp.int32), donate=donate, bf16=bf16)


# --------------------------------------------------------------------------------------
# Per-call overhead: tiny MLP, forward and full train step
# --------------------------------------------------------------------------------------


def _mlp_params(cfg: MLPConfig) -> dict:
    rng = np.random.default_rng(1)
    w = cfg.width
    return {"w1": rng.standard_normal((w, w), dtype=np.float32) / math.sqrt(w), "b1": np.zeros(w, np.float32),
            "w2": rng.standard_normal((w, w), dtype=np.float32) / math.sqrt(w), "b2": np.zeros(w, np.float32)}


def overhead_cases(cfg: MLPConfig, frameworks: tuple[str, ...], *, donate: bool) -> dict:
    """{(kind, name): (call, block)} for the tiny-MLP forward and train-step cases.

    kind is "forward" or "train"; name is "jax.jit", "pdx.jit", "nnx.jit",
    "torch" or "paddle". Each call does one forward (or one train step) on the
    same batch; block waits for the result.
    """
    x_np, y_np = mlp_batch(cfg)
    p_np = _mlp_params(cfg)
    cases = {}
    if "jax" in frameworks or "pdx" in frameworks:
        import jax
        import jax.numpy as jnp
        import optax
        from flax import nnx

        x, y = jnp.asarray(x_np), jnp.asarray(y_np)
        block = jax.block_until_ready

    if "jax" in frameworks:
        params = jax.tree.map(jnp.asarray, p_np)

        def mlp(p, x):
            return jax.nn.relu(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]

        forward = jax.jit(mlp)
        cases["forward", "jax.jit"] = (lambda: forward(params, x), block)

        tx = optax.adamw(cfg.lr, weight_decay=0.01)

        @functools.partial(jax.jit, donate_argnums=(0, 1) if donate else ())
        def step(p, opt_state, x, y):
            loss, grads = jax.value_and_grad(lambda p: jnp.mean((mlp(p, x) - y) ** 2))(p)
            updates, opt_state = tx.update(grads, opt_state, p)
            return optax.apply_updates(p, updates), opt_state, loss

        state = [jax.tree.map(jnp.asarray, p_np), None]
        state[1] = tx.init(state[0])

        def train_call():
            state[0], state[1], loss = step(state[0], state[1], x, y)
            return loss

        cases["train", "jax.jit"] = (train_call, block)

        class NNXMLP(nnx.Module):
            def __init__(self, rngs):
                self.fc1 = nnx.Linear(cfg.width, cfg.width, rngs=rngs)
                self.fc2 = nnx.Linear(cfg.width, cfg.width, rngs=rngs)

            def __call__(self, x):
                return self.fc2(jax.nn.relu(self.fc1(x)))

        nnx_model = NNXMLP(nnx.Rngs(0))
        nnx_forward = nnx.jit(lambda m, x: m(x))
        cases["forward", "nnx.jit"] = (lambda: nnx_forward(nnx_model, x), block)

    if "pdx" in frameworks:
        import pdx
        from pdx import nn
        from pdx.nn import functional as F

        class TinyMLP(nn.Layer):
            def __init__(self):
                super().__init__()
                self.fc1, self.fc2 = nn.Linear(cfg.width, cfg.width), nn.Linear(cfg.width, cfg.width)

            def forward(self, x):
                return self.fc2(F.relu(self.fc1(x)))

        pdx.seed(0)
        model = TinyMLP()

        @pdx.jit
        def pdx_forward(model, x):
            return model(x)

        cases["forward", "pdx.jit"] = (lambda: pdx_forward(model, x), block)

        train_model = TinyMLP()
        opt = pdx.optimizer.AdamW(learning_rate=cfg.lr, parameters=train_model.parameters(), weight_decay=0.01)

        def mse(model, x, y):
            return F.mse_loss(model(x), y)

        @pdx.jit(donate_state=donate)
        def pdx_train_step(model, opt, x, y):
            loss, grads = pdx.value_and_grad(mse)(model, x, y)
            opt.step(grads)
            return loss

        cases["train", "pdx.jit"] = (lambda: pdx_train_step(train_model, opt, x, y), block)

    if "torch" in frameworks:
        import torch

        tm = torch.nn.Sequential(torch.nn.Linear(cfg.width, cfg.width), torch.nn.ReLU(),
                                 torch.nn.Linear(cfg.width, cfg.width))
        tx_, ty_ = torch.from_numpy(x_np), torch.from_numpy(y_np)
        topt = torch.optim.AdamW(tm.parameters(), lr=cfg.lr, weight_decay=0.01)

        def torch_forward():
            with torch.no_grad():
                return tm(tx_)

        def torch_train():
            topt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.mse_loss(tm(tx_), ty_)
            loss.backward()
            topt.step()
            return loss

        cases["forward", "torch"] = (torch_forward, lambda out: out.sum().item())
        cases["train", "torch"] = (torch_train, lambda out: out.item())

    if "paddle" in frameworks:
        paddle = _paddle_setup(os.cpu_count() or 1)
        pm = paddle.nn.Sequential(paddle.nn.Linear(cfg.width, cfg.width), paddle.nn.ReLU(),
                                  paddle.nn.Linear(cfg.width, cfg.width))
        px, py = paddle.to_tensor(x_np), paddle.to_tensor(y_np)
        popt = paddle.optimizer.AdamW(learning_rate=cfg.lr, parameters=pm.parameters(), weight_decay=0.01)

        def paddle_forward():
            with paddle.no_grad():
                return pm(px)

        def paddle_train():
            loss = paddle.nn.functional.mse_loss(pm(px), py)
            loss.backward()
            popt.step()
            popt.clear_grad()
            return loss

        cases["forward", "paddle"] = (paddle_forward, lambda out: out.sum().item())
        cases["train", "paddle"] = (paddle_train, lambda out: out.item())
    return cases


# --------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------

_RUNNERS = {
    ("gpt", "pdx"): lambda a, d: pdx_gpt(GPTConfig(), d, donate=a.donate),
    ("gpt", "jax"): lambda a, d: jax_gpt(GPTConfig(), d, donate=a.donate),
    ("gpt", "torch"): lambda a, d: torch_gpt(GPTConfig(), d, a.threads),
    ("gpt", "paddle"): lambda a, d: paddle_gpt(GPTConfig(), d, a.threads),
    ("resnet", "pdx"): lambda a, d: pdx_resnet(ResNetConfig(), d, donate=a.donate, data_format="NCHW"),
    ("resnet", "pdx-nhwc"): lambda a, d: pdx_resnet(ResNetConfig(), d, donate=a.donate, data_format="NHWC"),
    ("resnet", "jax"): lambda a, d: jax_resnet(ResNetConfig(), d, donate=a.donate),
    ("resnet", "torch"): lambda a, d: torch_resnet(ResNetConfig(), d, a.threads),
    ("resnet", "paddle"): lambda a, d: paddle_resnet(ResNetConfig(), d, a.threads),
    # --bf16: mixed precision (bf16 compute, f32 weights and loss)
    ("gpt", "pdx-bf16"): lambda a, d: pdx_gpt(GPTConfig(), d, donate=a.donate, bf16=True),
    ("gpt", "torch-bf16"): lambda a, d: torch_gpt(GPTConfig(), d, a.threads, bf16=True),
    ("resnet", "pdx-bf16"): lambda a, d: pdx_resnet(ResNetConfig(), d, donate=a.donate, data_format="NHWC",
                                                    bf16=True),
    ("resnet", "torch-bf16"): lambda a, d: torch_resnet(ResNetConfig(), d, a.threads, bf16=True),
}

# Timed together (interleaved): the JAX-based pair whose ratio has a target.
# PyTorch and Paddle are timed alone, after them: their spinning OpenMP
# workers would slow whatever is interleaved with them.
_GROUPS = (("jax", "pdx", "pdx-nhwc", "pdx-bf16"), ("torch",), ("torch-bf16",), ("paddle",))


def _selected(bench: str, fw: str, args) -> bool:
    if fw.endswith("-bf16"):
        return args.bf16 and fw.split("-")[0] in args.frameworks
    if bench == "resnet" and fw.startswith("pdx"):
        return "pdx" in args.frameworks and args.pdx_format in (("NCHW" if fw == "pdx" else "NHWC"), "both")
    return fw in args.frameworks


def run_training(bench: str, args) -> list[Result]:
    data = gpt_batch(GPTConfig()) if bench == "gpt" else resnet_batch(ResNetConfig())
    expected = expected_gpt_params(GPTConfig()) if bench == "gpt" else expected_resnet_params(ResNetConfig())
    results = []
    for group in _GROUPS:
        group = [fw for fw in group if (bench, fw) in _RUNNERS and _selected(bench, fw, args)]
        if not group:
            continue
        settle()
        steps = {}
        for fw in group:
            r = Result(bench, fw)
            results.append(r)
            try:
                step, r.params = _RUNNERS[bench, fw](args, data)
                t0 = time.perf_counter()
                r.first_loss = step()
                first_s = time.perf_counter() - t0
                for _ in range(args.warmup):
                    step()
            except Exception as e:  # report it and go on with the other frameworks
                r.error = f"{type(e).__name__}: {e}"
                print(f"  {bench:7s} {fw:7s} FAILED {r.error}", flush=True)
                continue
            if not fw.startswith(("torch", "paddle")):
                r.compile_s = first_s
            steps[fw] = (r, step)
            mismatch = "" if r.params == expected else f"   PARAMS {r.params:,} != expected {expected:,}"
            print(f"  {bench:7s} {fw:7s} ready: {r.params:,} trainable params, first call {first_s:.1f} s, "
                  f"loss {r.first_loss:.4f}{mismatch}", flush=True)

        def run_one(case) -> float:
            r, step = case
            t0 = time.perf_counter()
            r.last_loss = step()
            return time.perf_counter() - t0

        for fw, ts in round_robin(steps, run_one, rounds=args.steps, budget_s=args.budget).items():
            r = steps[fw][0]
            r.times_s = ts
            print(f"  {bench:7s} {fw:7s} {1e3 * r.median:9.1f} ms/step (median of {len(ts)})", flush=True)
    return results


def run_overhead(args) -> list[Result]:
    cases = overhead_cases(MLPConfig(), args.frameworks, donate=args.donate)
    results = []
    for group in _GROUPS:
        names = {"jax": ("jax.jit", "nnx.jit"), "pdx": ("pdx.jit",)}
        members = {key: case for key, case in cases.items()
                   if any(key[1] == n or key[1] in names.get(n, ()) for n in group)}
        if not members:
            continue
        settle()
        for call, block in members.values():  # compile / warm up
            block(call())
            _timed_calls(call, block, min(args.calls, 200))
        times = round_robin(members, lambda case: _timed_calls(*case, args.calls), rounds=args.rounds)
        for (kind, name), ts in times.items():
            r = Result(f"mlp-{kind}", name, unit="us", times_s=ts)
            print(f"  mlp-{kind:7s} {name:8s} {1e6 * r.median:9.1f} us/call", flush=True)
            results.append(r)
    return results


def _ratio(results: list[Result], bench: str, num: str, den: str) -> float | None:
    by = {r.framework: r for r in results if r.bench == bench and r.median}
    if num in by and den in by:
        return by[num].median / by[den].median
    return None


def report(results: list[Result]) -> str:
    """The results table and ratios as text (also pasted into RESULTS.md)."""
    lines = ["| benchmark | framework | trainable params | compile s | median | min | steps/rounds | vs jax | loss first -> last |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in results:
        if r.error:
            lines.append(f"| {r.bench} | {r.framework} | | | FAILED: {r.error[:80]} | | | | |")
            continue
        scale = 1e3 if r.unit == "ms" else 1e6
        base = "jax" if r.unit == "ms" else "jax.jit"
        ratio = _ratio(results, r.bench, r.framework, base)
        loss = f"{r.first_loss:.3f} -> {r.last_loss:.3f}" if r.first_loss is not None else ""
        lines.append(
            f"| {r.bench} | {r.framework} | {'' if r.params is None else f'{r.params:,}'} | "
            f"{'' if r.compile_s is None else f'{r.compile_s:.1f}'} | {scale * r.median:.1f} {r.unit} | "
            f"{scale * min(r.times_s):.1f} {r.unit} | {len(r.times_s)} | "
            f"{'' if ratio is None else f'{ratio:.2f}'} | {loss} |")
    lines.append("")
    targets = [("gpt", "pdx", "jax", TARGET_VS_JAX), ("resnet", "pdx", "jax", TARGET_VS_JAX),
               ("resnet", "pdx-nhwc", "jax", TARGET_VS_JAX),
               ("gpt", "pdx", "torch", TARGET_VS_TORCH), ("resnet", "pdx", "torch", TARGET_VS_TORCH),
               ("resnet", "pdx-nhwc", "torch", TARGET_VS_TORCH),
               ("gpt", "pdx-bf16", "torch-bf16", None), ("resnet", "pdx-bf16", "torch-bf16", None),
               ("gpt", "pdx-bf16", "pdx", None), ("resnet", "pdx-bf16", "pdx-nhwc", None),
               ("mlp-forward", "pdx.jit", "jax.jit", TARGET_OVERHEAD),
               ("mlp-train", "pdx.jit", "jax.jit", None)]
    for bench, num, den, target in targets:
        ratio = _ratio(results, bench, num, den)
        if ratio is None:
            continue
        verdict = "" if target is None else f" (target <= {target}: {'met' if ratio <= target else 'MISSED'})"
        extra = [f"{num} / {other} = {q:.2f}" for other in ("paddle", "nnx.jit")
                 if (q := _ratio(results, bench, num, other)) is not None] if den.startswith("jax") else []
        lines.append(f"- {bench}: {num} / {den} = {ratio:.3f}{verdict}" + ("; " + ", ".join(extra) if extra else ""))
    return "\n".join(lines)


def environment() -> str:
    import jax

    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            kb = int(next(line.split()[1] for line in f if line.startswith("MemTotal")))
        mem = f", {kb / 2**20:.0f} GiB RAM"
    except (OSError, StopIteration):
        pass
    versions = [f"python {platform.python_version()}", f"jax {jax.__version__}"]
    for mod in ("flax", "optax", "torch", "paddle"):
        if mod in sys.modules:
            versions.append(f"{mod} {sys.modules[mod].__version__}")
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    return (f"{cpu}, {os.cpu_count()} cores{mem}; {', '.join(versions)}; "
            f"backend {jax.default_backend()}; load average (1/5/15 min) {load}")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", default=",".join(BENCHMARKS),
                   help="comma list of benchmarks: gpt,resnet,overhead (default: all)")
    p.add_argument("--frameworks", default=",".join(FRAMEWORKS),
                   help="comma list of pdx,jax,torch,paddle (default: all)")
    p.add_argument("--steps", type=int, default=20, help="timed steps per framework (default 20)")
    p.add_argument("--warmup", type=int, default=2, help="untimed steps after the first call (default 2)")
    p.add_argument("--budget", type=float, default=40.0,
                   help="stop timing a group (jax+pdx, torch, paddle) once 5 steps are in and one of "
                        "them spent this many seconds (default 40)")
    p.add_argument("--rounds", type=int, default=10, help="overhead: rounds (default 10)")
    p.add_argument("--calls", type=int, default=2000, help="overhead: calls per round (default 2000)")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                   help="intra-op threads for torch and paddle (default: all cores, as XLA uses)")
    p.add_argument("--donate", action="store_true",
                   help="donate state buffers: pdx.jit(donate_state=True) and jax.jit(donate_argnums=...)")
    p.add_argument("--bf16", action="store_true",
                   help="also time bf16 mixed precision: pdx.amp.auto_cast(dtype='bfloat16') (ResNet in NHWC) "
                        "and torch.autocast('cpu', torch.bfloat16) (rows pdx-bf16, torch-bf16)")
    p.add_argument("--pdx-format", default="both", choices=("NCHW", "NHWC", "both"),
                   help="pdx ResNet data_format: NCHW (Paddle's default, row 'pdx'), NHWC (flax's layout, "
                        "row 'pdx-nhwc') or both (default)")
    args = p.parse_args(argv)
    args.only = tuple(s.strip() for s in args.only.split(",") if s.strip())
    args.frameworks = tuple(s.strip() for s in args.frameworks.split(",") if s.strip())
    bad = [b for b in args.only if b not in BENCHMARKS] + [f for f in args.frameworks if f not in FRAMEWORKS]
    if bad:
        p.error(f"unknown benchmark/framework {bad}; choose from {BENCHMARKS} and {FRAMEWORKS}")
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    warnings.filterwarnings("ignore")  # paddle's import-time chatter would bury the table
    # Before any JAX backend starts: pdx's XLA:CPU defaults (pdx/_xla_defaults.py) then
    # apply to the hand-written JAX rows too, so pdx / jax compares the programs only.
    import pdx  # noqa: F401
    start_load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"train_step.py {' '.join(sys.argv[1:])}  (load average at start: {start_load})\n", flush=True)
    results = []
    for bench in args.only:
        print(f"[{bench}]", flush=True)
        results += run_overhead(args) if bench == "overhead" else run_training(bench, args)
    print("\n" + environment() + "\n")
    print(report(results))


if __name__ == "__main__":
    main()
