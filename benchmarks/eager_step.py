"""Eager training steps, pdx against Paddle's dygraph, side by side.

Each benchmark is a training loop written the way a Paddle user writes it,
with no `pdx.jit` and no `paddle.jit.to_static`:

  pdx     `loss, grads = pdx.value_and_grad(loss_fn)(model, ...)`; `opt.step(grads)`
  paddle  `loss = loss_fn(model, ...)`; `loss.backward()`; `opt.step()`; `opt.clear_grad()`

The models are defined once, over the framework module (`P` is `pdx` or
`paddle`: pdx keeps Paddle's names), pdx initializes the weights and Paddle
gets a copy of them, and both see the same data, so their losses after N steps
agree to float32 rounding (the table shows both). Benchmarks:

  actor_critic         an MLP policy with an actor and a critic head (4 -> 128 -> 2 / 1) on a
                       numpy toy environment: each step rolls out 32 moves, each move an eager
                       forward on one observation, an action drawn with numpy against the
                       policy's probability (`.numpy()`) and a Python branch on it; then one Adam
                       step on the episode's advantage actor-critic loss. pdx replays the
                       episode's observations in the loss function (Paddle keeps its tape).
  actor_critic_inloss  the same, with the rollout *inside* pdx's loss function, as a direct port
                       of the Paddle loop writes it: the probability read with `.item()` inside
                       the differentiated function (pdx then runs that function op by op).
  ghostnet             a GhostNet-style CNN (ghost modules: a 1x1 primary convolution plus a cheap
                       depthwise 3x3 one, concatenated; BatchNorm in training mode; six ghost
                       bottlenecks), 32x32 images, batch 16, 10 classes, Momentum.
  seq2seq              a GRU encoder and a GRUCell decoder stepped in a Python loop for 12 steps
                       with teacher forcing (vocab 64, hidden 64, batch 16), Adam.

Prints, per benchmark and framework: the median ms per step (after warm-up),
the first step's seconds (pdx: trace and compile), pdx / paddle, and the
loss after the first and the last step of each. Target: pdx <= 1.5x Paddle.

Usage:
  python benchmarks/eager_step.py                           # all (~3 min on an idle 2-core CPU)
  python benchmarks/eager_step.py --only ghostnet --steps 10
  python benchmarks/eager_step.py --eager                   # pdx with pdx.jit.enable_to_static(False)
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import statistics
import sys
import time
import warnings
from collections.abc import Callable

import numpy as np

BENCHMARKS = ("actor_critic", "actor_critic_inloss", "ghostnet", "seq2seq")
FRAMEWORKS = ("pdx", "paddle")
TARGET = 1.5  # pdx / paddle, time per eager step


# --------------------------------------------------------------------------------------
# Configuration and data
# --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ActorCriticConfig:
    """Policy shapes, rollout length and optimizer."""

    obs: int = 4  # observation size
    hidden: int = 128  # shared hidden layer
    actions: int = 2  # discrete actions
    moves: int = 32  # environment moves per training step (one episode)
    gamma: float = 0.99  # discount
    lr: float = 1e-3  # Adam learning rate


@dataclasses.dataclass(frozen=True)
class GhostNetConfig:
    """GhostNet-style CNN shapes and optimizer."""

    batch: int = 16
    image: int = 32  # height = width
    classes: int = 10
    stem: int = 16  # stem convolution channels
    # ghost bottlenecks: (in, hidden, out, stride)
    blocks: tuple = ((16, 16, 16, 1), (16, 48, 24, 2), (24, 72, 24, 1), (24, 72, 40, 2), (40, 120, 40, 1),
                     (40, 240, 80, 2))
    head: int = 160  # channels of the final 1x1 convolution
    lr: float = 0.05  # Momentum learning rate
    momentum: float = 0.9


@dataclasses.dataclass(frozen=True)
class Seq2SeqConfig:
    """Encoder-decoder shapes and optimizer."""

    vocab: int = 64
    hidden: int = 64  # embedding size = GRU hidden size
    batch: int = 16
    src_len: int = 10
    tgt_len: int = 12  # decoder steps (teacher forcing)
    lr: float = 1e-3  # Adam learning rate


def env_reset(rng: np.random.Generator) -> np.ndarray:
    return rng.uniform(-0.05, 0.05, size=4).astype(np.float32)


def env_move(state: np.ndarray, action: int, rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """A toy cart: the action pushes left or right; leaving [-1, 1] costs -1 and resets."""
    push = 1.0 if action == 1 else -1.0
    state = (0.95 * state + 0.1 * np.array([push, state[0], -state[3], state[2]], np.float32)
             + 0.05 * rng.standard_normal(4).astype(np.float32)).astype(np.float32)
    if abs(state[0]) > 1.0:
        return env_reset(rng), -1.0
    return state, 1.0 - abs(float(state[0]))


def discounted(rewards: list[float], gamma: float) -> np.ndarray:
    out, running = [], 0.0
    for r in reversed(rewards):
        running = r + gamma * running
        out.append(running)
    returns = np.asarray(out[::-1], np.float32)
    return (returns - returns.mean()) / (returns.std() + 1e-6)


def ghostnet_batch(cfg: GhostNetConfig, step: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1000 + step)
    x = rng.standard_normal((cfg.batch, 3, cfg.image, cfg.image), dtype=np.float32)
    return x, rng.integers(0, cfg.classes, size=(cfg.batch,)).astype(np.int32)


def seq2seq_batch(cfg: Seq2SeqConfig, step: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(2000 + step)
    src = rng.integers(2, cfg.vocab, size=(cfg.batch, cfg.src_len)).astype(np.int32)
    tgt = np.concatenate([np.zeros((cfg.batch, 1), np.int32), np.flip(src, 1)[:, :cfg.tgt_len]], 1)
    if tgt.shape[1] < cfg.tgt_len + 1:
        tgt = np.pad(tgt, ((0, 0), (0, cfg.tgt_len + 1 - tgt.shape[1])), constant_values=1)
    return src, tgt


# --------------------------------------------------------------------------------------
# Models, once over the framework module P (pdx or paddle)
# --------------------------------------------------------------------------------------


def actor_critic_model(P, cfg: ActorCriticConfig):
    nn, F = P.nn, P.nn.functional

    class ActorCritic(nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(cfg.obs, cfg.hidden)
            self.actor = nn.Linear(cfg.hidden, cfg.actions)
            self.critic = nn.Linear(cfg.hidden, 1)

        def forward(self, obs):
            h = F.relu(self.fc1(obs))
            return self.actor(h), self.critic(h)

    return ActorCritic()


def ghostnet_model(P, cfg: GhostNetConfig):
    nn = P.nn

    def conv_bn(cin, cout, k, stride=1, groups=1, relu=True):
        layers = [nn.Conv2D(cin, cout, k, stride=stride, padding=k // 2, groups=groups, bias_attr=False),
                  nn.BatchNorm2D(cout)]
        return nn.Sequential(*layers, nn.ReLU()) if relu else nn.Sequential(*layers)

    class GhostModule(nn.Layer):
        """Half the output channels from a 1x1 convolution, half from a depthwise 3x3 on those."""

        def __init__(self, cin, cout, relu=True):
            super().__init__()
            primary = cout // 2
            self.primary = conv_bn(cin, primary, 1, relu=relu)
            self.cheap = conv_bn(primary, cout - primary, 3, groups=primary, relu=relu)

        def forward(self, x):
            x1 = self.primary(x)
            return P.concat([x1, self.cheap(x1)], axis=1)

    class GhostBottleneck(nn.Layer):
        def __init__(self, cin, hidden, cout, stride):
            super().__init__()
            self.ghost1 = GhostModule(cin, hidden)
            self.down = conv_bn(hidden, hidden, 3, stride, groups=hidden, relu=False) if stride > 1 else None
            self.ghost2 = GhostModule(hidden, cout, relu=False)
            if stride == 1 and cin == cout:
                self.shortcut = None
            else:
                self.shortcut = nn.Sequential(conv_bn(cin, cin, 3, stride, groups=cin, relu=False),
                                              conv_bn(cin, cout, 1, relu=False))

        def forward(self, x):
            h = self.ghost1(x)
            if self.down is not None:
                h = self.down(h)
            h = self.ghost2(h)
            return h + (x if self.shortcut is None else self.shortcut(x))

    class GhostNet(nn.Layer):
        def __init__(self):
            super().__init__()
            self.stem = conv_bn(3, cfg.stem, 3)
            self.blocks = nn.Sequential(*[GhostBottleneck(*b) for b in cfg.blocks])
            self.head = conv_bn(cfg.blocks[-1][2], cfg.head, 1)
            self.pool = nn.AdaptiveAvgPool2D(1)
            self.fc = nn.Linear(cfg.head, cfg.classes)

        def forward(self, x):
            x = self.head(self.blocks(self.stem(x)))
            return self.fc(P.flatten(self.pool(x), 1))

    return GhostNet()


def seq2seq_model(P, cfg: Seq2SeqConfig):
    nn = P.nn

    class Seq2Seq(nn.Layer):
        def __init__(self):
            super().__init__()
            self.src_embedding = nn.Embedding(cfg.vocab, cfg.hidden)
            self.encoder = nn.GRU(cfg.hidden, cfg.hidden)
            self.tgt_embedding = nn.Embedding(cfg.vocab, cfg.hidden)
            self.decoder_cell = nn.GRUCell(cfg.hidden, cfg.hidden)
            self.output_layer = nn.Linear(cfg.hidden, cfg.vocab)

    return Seq2Seq()


def seq2seq_loss(P, model, src, tgt, steps: int):
    """Teacher forcing: each decoder step reads the previous target token."""
    F = P.nn.functional
    _, state = model.encoder(model.src_embedding(src))
    h = state[-1]
    loss = 0.0
    for t in range(steps):
        out, h = model.decoder_cell(model.tgt_embedding(tgt[:, t]), h)
        loss = loss + F.cross_entropy(model.output_layer(out), tgt[:, t + 1])
    return loss / steps


def actor_critic_loss(P, logits, values, actions, returns):
    F = P.nn.functional
    logp = P.take_along_axis(F.log_softmax(logits, axis=-1), actions.unsqueeze(1), axis=1).squeeze(1)
    advantage = returns - values.squeeze(1)
    return -(logp * advantage.detach()).mean() + 0.5 * (advantage ** 2).mean()


# --------------------------------------------------------------------------------------
# The training steps of each framework
# --------------------------------------------------------------------------------------


def sample_action(p0: float, u: float) -> int:
    """Action 0 with probability p0 (a Python branch on the policy's output)."""
    return 0 if u < p0 else 1


def pdx_steps(bench: str, cfg, P) -> tuple[Callable[[int], float], dict]:
    """(step(i) -> loss, the initial state_dict as numpy) for pdx."""
    F = P.nn.functional
    P.seed(0)
    if bench.startswith("actor_critic"):
        model = actor_critic_model(P, cfg)
        opt = P.optimizer.Adam(learning_rate=cfg.lr, parameters=model.parameters())
        rngs = {}

        def replay_loss(model, observations, actions, returns):
            logits, values = model(observations)
            return actor_critic_loss(P, logits, values, actions, returns)

        def rollout_loss(model, rng, u):
            # the Paddle loop as written, inside the differentiated function
            state, logits, values, actions, rewards = env_reset(rng), [], [], [], []
            for t in range(cfg.moves):
                lg, v = model(P.to_tensor(state[None]))
                action = sample_action(F.softmax(lg, axis=-1)[0, 0].item(), u[t])
                state, reward = env_move(state, action, rng)
                logits.append(lg)
                values.append(v)
                actions.append(action)
                rewards.append(reward)
            returns = P.to_tensor(discounted(rewards, cfg.gamma))
            return actor_critic_loss(P, P.concat(logits), P.concat(values), P.to_tensor(actions), returns)

        def step(i: int) -> float:
            rng = rngs.setdefault(i, np.random.default_rng(i))
            u = rng.random(cfg.moves)
            if bench == "actor_critic_inloss":
                loss, grads = P.value_and_grad(rollout_loss)(model, rng, u)
            else:
                state, observations, actions, rewards = env_reset(rng), [], [], []
                for t in range(cfg.moves):
                    observations.append(state)
                    logits, _ = model(P.to_tensor(state[None]))
                    action = sample_action(float(F.softmax(logits, axis=-1).numpy()[0, 0]), u[t])
                    state, reward = env_move(state, action, rng)
                    actions.append(action)
                    rewards.append(reward)
                loss, grads = P.value_and_grad(replay_loss)(
                    model, P.to_tensor(np.stack(observations)), P.to_tensor(np.asarray(actions, np.int32)),
                    P.to_tensor(discounted(rewards, cfg.gamma)))
            opt.step(grads)
            return float(loss)

    elif bench == "ghostnet":
        model = ghostnet_model(P, cfg)
        model.train()
        opt = P.optimizer.Momentum(learning_rate=cfg.lr, momentum=cfg.momentum, parameters=model.parameters())

        def loss_fn(model, x, y):
            return F.cross_entropy(model(x), y)

        def step(i: int) -> float:
            x, y = ghostnet_batch(cfg, i)
            loss, grads = P.value_and_grad(loss_fn)(model, P.to_tensor(x), P.to_tensor(y))
            opt.step(grads)
            return float(loss)

    else:
        model = seq2seq_model(P, cfg)
        opt = P.optimizer.Adam(learning_rate=cfg.lr, parameters=model.parameters())

        def loss_fn(model, src, tgt):
            return seq2seq_loss(P, model, src, tgt, cfg.tgt_len)

        def step(i: int) -> float:
            src, tgt = seq2seq_batch(cfg, i)
            loss, grads = P.value_and_grad(loss_fn)(model, P.to_tensor(src), P.to_tensor(tgt))
            opt.step(grads)
            return float(loss)

    return step, {k: np.asarray(v) for k, v in model.state_dict().items()}


def paddle_steps(bench: str, cfg, P, weights: dict) -> Callable[[int], float]:
    F = P.nn.functional
    P.seed(0)
    model = {"ghostnet": ghostnet_model, "seq2seq": seq2seq_model}.get(bench, actor_critic_model)(P, cfg)
    missing = set(weights) - set(model.state_dict())
    if missing:
        raise RuntimeError(f"{bench}: paddle's model has no {sorted(missing)}")
    model.set_state_dict({k: P.to_tensor(v) for k, v in weights.items()})
    model.train()
    if bench == "ghostnet":
        opt = P.optimizer.Momentum(learning_rate=cfg.lr, momentum=cfg.momentum, parameters=model.parameters())
    else:
        opt = P.optimizer.Adam(learning_rate=cfg.lr, parameters=model.parameters())
    rngs = {}

    def loss_of(i: int):
        if bench == "ghostnet":
            x, y = ghostnet_batch(cfg, i)
            return F.cross_entropy(model(P.to_tensor(x)), P.to_tensor(y.astype("int64")))
        if bench == "seq2seq":
            src, tgt = seq2seq_batch(cfg, i)
            return seq2seq_loss(P, model, P.to_tensor(src.astype("int64")), P.to_tensor(tgt.astype("int64")),
                                cfg.tgt_len)
        rng = rngs.setdefault(i, np.random.default_rng(i))
        u = rng.random(cfg.moves)
        state, logits, values, actions, rewards = env_reset(rng), [], [], [], []
        for t in range(cfg.moves):  # the tape keeps the rollout's forward passes
            lg, v = model(P.to_tensor(state[None]))
            action = sample_action(F.softmax(lg, axis=-1)[0, 0].item(), u[t])
            state, reward = env_move(state, action, rng)
            logits.append(lg)
            values.append(v)
            actions.append(action)
            rewards.append(reward)
        returns = P.to_tensor(discounted(rewards, cfg.gamma))
        return actor_critic_loss(P, P.concat(logits), P.concat(values), P.to_tensor(np.asarray(actions, "int64")),
                                 returns)

    def step(i: int) -> float:
        loss = loss_of(i)
        loss.backward()
        opt.step()
        opt.clear_grad()
        return float(loss)

    return step


# --------------------------------------------------------------------------------------
# Timing and report
# --------------------------------------------------------------------------------------


@dataclasses.dataclass
class Result:
    bench: str
    framework: str
    first_s: float = 0.0  # the first step (pdx: trace + compile)
    times_s: list = dataclasses.field(default_factory=list)
    first_loss: float | None = None
    last_loss: float | None = None

    @property
    def median_ms(self) -> float:
        return 1e3 * statistics.median(self.times_s)


def run(bench: str, framework: str, step: Callable[[int], float], *, warmup: int, steps: int) -> Result:
    result = Result(bench, framework)
    for i in range(1 + warmup + steps):
        t0 = time.perf_counter()
        loss = step(i)
        dt = time.perf_counter() - t0
        if i == 0:
            result.first_s, result.first_loss = dt, loss
        elif i > warmup:
            result.times_s.append(dt)
        result.last_loss = loss
    return result


def report(results: list[Result]) -> str:
    rows = [f"{'benchmark':<20} {'framework':<8} {'ms/step':>9} {'first s':>8} {'pdx/paddle':>14} "
            f"{'loss step 1':>12} {'loss step N':>12}"]
    by = {(r.bench, r.framework): r for r in results}
    for r in results:
        ratio = ""
        paddle = by.get((r.bench, "paddle"))
        if r.framework != "paddle" and paddle is not None:
            ratio = f"{r.median_ms / paddle.median_ms:.2f}x"
            ratio += " ok" if r.median_ms / paddle.median_ms <= TARGET else " >1.5"
        rows.append(f"{r.bench:<20} {r.framework:<8} {r.median_ms:>9.2f} {r.first_s:>8.2f} {ratio:>14} "
                    f"{r.first_loss:>12.6f} {r.last_loss:>12.6f}")
    return "\n".join(rows)


def environment() -> str:
    import jax

    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    versions = [f"python {platform.python_version()}", f"jax {jax.__version__}"]
    for mod in ("flax", "paddle"):
        if mod in sys.modules:
            versions.append(f"{mod} {sys.modules[mod].__version__}")
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    return (f"{cpu}, {os.cpu_count()} cores; {', '.join(versions)}; backend {jax.default_backend()}; "
            f"load average (1/5/15 min) {load}")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", default=",".join(BENCHMARKS), help=f"comma list of {','.join(BENCHMARKS)}")
    p.add_argument("--frameworks", default=",".join(FRAMEWORKS), help="comma list of pdx,paddle")
    p.add_argument("--steps", type=int, default=20, help="timed steps (default 20)")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps after the first (default 3)")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="Paddle's intra-op threads")
    p.add_argument("--eager", action="store_true",
                   help="pdx with pdx.jit.enable_to_static(False): value_and_grad op by op")
    args = p.parse_args(argv)
    args.only = tuple(s.strip() for s in args.only.split(",") if s.strip())
    args.frameworks = tuple(s.strip() for s in args.frameworks.split(",") if s.strip())
    bad = [b for b in args.only if b not in BENCHMARKS] + [f for f in args.frameworks if f not in FRAMEWORKS]
    if bad:
        p.error(f"unknown benchmark/framework {bad}; choose from {BENCHMARKS} and {FRAMEWORKS}")
    return args


CONFIGS = {"actor_critic": ActorCriticConfig(), "actor_critic_inloss": ActorCriticConfig(),
           "ghostnet": GhostNetConfig(), "seq2seq": Seq2SeqConfig()}


def main(argv=None) -> None:
    args = parse_args(argv)
    warnings.filterwarnings("ignore")  # paddle's import-time chatter would bury the table
    import pdx

    if args.eager:
        pdx.jit.enable_to_static(False)
    start_load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"eager_step.py {' '.join(sys.argv[1:])}  (load average at start: {start_load})\n", flush=True)
    paddle = None
    if "paddle" in args.frameworks:
        import paddle

        paddle.set_device("cpu")
        paddle.base.core.set_num_threads(args.threads)
    results = []
    for bench in args.only:
        cfg = CONFIGS[bench]
        step, weights = pdx_steps(bench, cfg, pdx)  # pdx's initial weights, copied to paddle
        if "pdx" in args.frameworks:
            results.append(run(bench, "pdx", step, warmup=args.warmup, steps=args.steps))
            print(report(results[-1:]).splitlines()[1], flush=True)
        if paddle is not None:
            time.sleep(0.5)  # let the other framework's threads go idle
            results.append(run(bench, "paddle", paddle_steps(bench, cfg, paddle, weights),
                               warmup=args.warmup, steps=args.steps))
            print(report(results[-1:]).splitlines()[1], flush=True)
    print("\n" + environment() + "\n")
    print(report(results))


if __name__ == "__main__":
    main()
