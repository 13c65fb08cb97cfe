"""Deep Q-learning on a generated chain MDP: a Q-network and a target network
(a copy.deepcopy, synced with set_state_dict every few steps), a numpy replay
buffer, epsilon-greedy actions from a numpy generator, Q(s, a) picked with
paddle.take_along_axis, targets from the target network's max, and
F.smooth_l1_loss."""
import copy
import json

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F

paddle.set_device("cpu")
N_STATES, N_ACTIONS, GAMMA, BATCH = 5, 2, 0.9, 32


class Chain:
    """Action 1 moves right (reward 1 at the end, then back to the start); action 0 returns to the start (0.1)."""

    def __init__(self):
        self.state = 0

    def step(self, action):
        if action == 0:
            self.state, reward = 0, 0.1
        elif self.state == N_STATES - 1:
            self.state, reward = 0, 1.0
        else:
            self.state, reward = self.state + 1, 0.0
        return self.state, reward


class QNet(nn.Layer):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(N_STATES, 24), nn.ReLU(), nn.Linear(24, N_ACTIONS))

    def forward(self, obs):
        return self.net(obs)


def td_loss(q_net, target_net, obs, actions, rewards, next_obs):
    q = paddle.take_along_axis(q_net(obs), actions, axis=1)
    with paddle.no_grad():
        target = rewards + GAMMA * target_net(next_obs).max(axis=1, keepdim=True)
    return F.smooth_l1_loss(q, target)


q_net = QNet()
rng = np.random.RandomState(47)
for name, param in q_net.named_parameters():
    param.set_value((rng.randn(*param.shape) * 0.3).astype("float32"))
target_net = copy.deepcopy(q_net)
target_net.eval()
opt = paddle.optimizer.Adam(learning_rate=0.005, parameters=q_net.parameters())
eye = np.eye(N_STATES, dtype="float32")

env, buffer, losses, rewards_seen = Chain(), [], [], []
for step in range(120):
    state = env.state
    epsilon = max(0.1, 1.0 - step / 80)
    if rng.rand() < epsilon:
        action = rng.randint(N_ACTIONS)
    else:
        with paddle.no_grad():
            action = int(q_net(paddle.to_tensor(eye[state][None])).argmax(axis=1)[0])
    next_state, reward = env.step(action)
    buffer.append((state, action, reward, next_state))
    rewards_seen.append(reward)
    if len(buffer) >= BATCH:
        idx = rng.randint(0, len(buffer), size=BATCH)
        s, a, r, s2 = (np.array(col) for col in zip(*[buffer[i] for i in idx]))
        obs, next_obs = paddle.to_tensor(eye[s]), paddle.to_tensor(eye[s2])
        actions = paddle.to_tensor(a.astype("int64")[:, None])
        rewards = paddle.to_tensor(r.astype("float32")[:, None])
        loss = td_loss(q_net, target_net, obs, actions, rewards, next_obs)
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss))
    if step % 20 == 0:
        target_net.set_state_dict(q_net.state_dict())

with paddle.no_grad():
    q_table = q_net(paddle.to_tensor(eye))
print(json.dumps({
    "losses": losses,
    "reward_sum": float(np.sum(rewards_seen)),
    "q_table": q_table.numpy().tolist(),
    "greedy": q_table.argmax(axis=1).numpy().tolist(),
}))
