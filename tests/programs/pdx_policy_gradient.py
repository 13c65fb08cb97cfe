"""REINFORCE on a tiny generated gridworld (a 1-D corridor in numpy): a policy
network, paddle.distribution.Categorical over softmax probabilities, discounted returns
normalised per episode, actions drawn with a numpy generator from the
policy's probabilities."""
import json

import numpy as np
import pdx as paddle
import pdx.nn as nn
import pdx.nn.functional as F
from pdx.distribution import Categorical

paddle.set_device("cpu")
N_STATES, GAMMA, MAX_STEPS = 6, 0.9, 12


class Corridor:
    """Start in the middle; reaching the right end pays 1, the left end -1; each step costs 0.01."""

    def reset(self):
        self.pos = N_STATES // 2
        return self.observe()

    def observe(self):
        return np.eye(N_STATES, dtype="float32")[self.pos]

    def step(self, action):
        self.pos += 1 if action == 1 else -1
        if self.pos >= N_STATES - 1:
            return self.observe(), 1.0, True
        if self.pos <= 0:
            return self.observe(), -1.0, True
        return self.observe(), -0.01, False


class Policy(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(N_STATES, 16)
        self.fc2 = nn.Linear(16, 2)

    def forward(self, obs):
        return self.fc2(F.relu(self.fc1(obs)))


def discounted(rewards):
    out, running = [], 0.0
    for r in reversed(rewards):
        running = r + GAMMA * running
        out.append(running)
    returns = np.array(out[::-1], dtype="float32")
    return (returns - returns.mean()) / (returns.std() + 1e-6)


def pg_loss(policy, obs, actions, returns):
    dist = Categorical(F.softmax(policy(obs), axis=-1))
    return -(dist.log_prob(actions) * returns).mean()


policy = Policy()
rng = np.random.RandomState(21)
for name, param in policy.named_parameters():
    param.set_value((rng.randn(*param.shape) * 0.3).astype("float32"))
opt = paddle.optimizer.Adam(learning_rate=0.02, parameters=policy.parameters())
env = Corridor()

episode_rewards, losses = [], []
for episode in range(25):
    obs, done, observations, actions, rewards = env.reset(), False, [], [], []
    while not done and len(rewards) < MAX_STEPS:
        with paddle.no_grad():
            probs = F.softmax(policy(paddle.to_tensor(obs[None])), axis=-1).numpy()[0]
        action = int(rng.rand() < probs[1])
        observations.append(obs)
        actions.append(action)
        obs, reward, done = env.step(action)
        rewards.append(reward)
    batch_obs = paddle.to_tensor(np.stack(observations))
    batch_actions = paddle.to_tensor(np.array(actions, dtype="int64"))
    batch_returns = paddle.to_tensor(discounted(rewards))
    loss, grads = paddle.value_and_grad(pg_loss)(policy, batch_obs, batch_actions, batch_returns)
    opt.step(grads)
    opt.clear_grad()
    episode_rewards.append(sum(rewards))
    losses.append(float(loss))

with paddle.no_grad():
    final_probs = F.softmax(policy(paddle.eye(N_STATES)), axis=-1)
    entropy = Categorical(final_probs).entropy()
print(json.dumps({
    "episode_rewards": episode_rewards,
    "losses": losses,
    "right_probs": final_probs[:, 1].numpy().tolist(),
    "entropy": entropy.numpy().tolist(),
}))
