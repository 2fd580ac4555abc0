"""REINFORCE on a cart-pole written in plain Python, in the style of PyTorch's reinforcement_learning example.

    python examples/reinforce_cartpole.py                 # until the running reward passes --target
    python examples/reinforce_cartpole.py --episodes 50   # a short run

The policy network maps the cart-pole's 4 observations to the probabilities of pushing left or right;
after each episode, the log-probabilities of the actions taken are weighted by the normalised
discounted returns (the policy-gradient theorem) and one Adam step is taken.
"""

from __future__ import annotations

import argparse
import math
import os
import random

import numpy as np

import ember
import ember.nn as nn
import ember.nn.functional as F
import ember.optim as optim
from ember.distributions import Categorical


class CartPole:
    """The classic cart-pole (Barto, Sutton & Anderson 1983) with Euler steps of 0.02 s, as Gym's CartPole-v1."""

    gravity, masscart, masspole, length, force_mag, tau = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
    theta_limit, x_limit = 12 * 2 * math.pi / 360, 2.4

    def __init__(self, max_steps: int = 500, seed: int | None = None) -> None:
        self.max_steps, self.rng = max_steps, random.Random(seed)
        self.state = [0.0] * 4
        self.steps = 0

    def reset(self) -> list[float]:
        self.state = [self.rng.uniform(-0.05, 0.05) for _ in range(4)]
        self.steps = 0
        return list(self.state)

    def step(self, action: int) -> tuple[list[float], float, bool]:
        x, x_dot, theta, theta_dot = self.state
        force = self.force_mag if action == 1 else -self.force_mag
        cos, sin = math.cos(theta), math.sin(theta)
        total_mass, pm_len = self.masspole + self.masscart, self.masspole * self.length
        temp = (force + pm_len * theta_dot**2 * sin) / total_mass
        theta_acc = (self.gravity * sin - cos * temp) / (
            self.length * (4.0 / 3.0 - self.masspole * cos**2 / total_mass)
        )
        x_acc = temp - pm_len * theta_acc * cos / total_mass
        x, x_dot = x + self.tau * x_dot, x_dot + self.tau * x_acc
        theta, theta_dot = theta + self.tau * theta_dot, theta_dot + self.tau * theta_acc
        self.state = [x, x_dot, theta, theta_dot]
        self.steps += 1
        fell = abs(x) > self.x_limit or abs(theta) > self.theta_limit
        return list(self.state), 1.0, fell or self.steps >= self.max_steps


class Policy(nn.Module):
    def __init__(self, hidden: int = 128) -> None:
        super().__init__()
        self.affine1 = nn.Linear(4, hidden)
        self.dropout = nn.Dropout(p=0.6)
        self.affine2 = nn.Linear(hidden, 2)
        self.saved_log_probs: list[ember.Tensor] = []
        self.rewards: list[float] = []

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        x = F.relu(self.dropout(self.affine1(x)))
        return F.softmax(self.affine2(x), dim=1)


def select_action(policy: Policy, state: list[float]) -> int:
    probs = policy(ember.tensor(state, dtype=ember.float32).unsqueeze(0))
    m = Categorical(probs)
    action = m.sample()
    policy.saved_log_probs.append(m.log_prob(action))
    return int(action.item())


def finish_episode(policy: Policy, optimizer: optim.Optimizer, gamma: float) -> float:
    eps = float(np.finfo(np.float32).eps)
    returns: list[float] = []
    R = 0.0
    for r in policy.rewards[::-1]:
        R = r + gamma * R
        returns.insert(0, R)
    ret = ember.tensor(returns)
    ret = (ret - ret.mean()) / (ret.std() + eps) if len(returns) > 1 else ret * 0
    policy_loss = ember.cat([-log_prob * R for log_prob, R in zip(policy.saved_log_probs, ret)]).sum()
    optimizer.zero_grad()
    policy_loss.backward()
    optimizer.step()
    del policy.rewards[:], policy.saved_log_probs[:]
    return policy_loss.item()


def main(argv: list[str] | None = None) -> dict[str, float]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--episodes", type=int, default=int(os.environ.get("EPISODES", 500)))
    p.add_argument("--max-steps", type=int, default=500, help="steps after which an episode counts as solved")
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--target", type=float, default=195.0, help="stop when the running reward passes this")
    p.add_argument("--seed", type=int, default=543)
    p.add_argument("--log-interval", type=int, default=10)
    args = p.parse_args(argv)

    ember.manual_seed(args.seed)
    env = CartPole(args.max_steps, seed=args.seed)
    policy = Policy()
    optimizer = optim.Adam(policy.parameters(), lr=args.lr)
    running_reward, first = 10.0, None
    for i_episode in range(1, args.episodes + 1):
        state, ep_reward, done = env.reset(), 0.0, False
        while not done:
            state, reward, done = env.step(select_action(policy, state))
            policy.rewards.append(reward)
            ep_reward += reward
        first = ep_reward if first is None else first
        running_reward = 0.05 * ep_reward + 0.95 * running_reward
        finish_episode(policy, optimizer, args.gamma)
        if args.log_interval and i_episode % args.log_interval == 0:
            print(f"Episode {i_episode}\tLast reward: {ep_reward:.0f}\tAverage reward: {running_reward:.2f}")
        if running_reward > args.target:
            print(f"Solved! Running reward is now {running_reward:.2f} after episode {i_episode}")
            break
    return {"running_reward": running_reward, "episodes": i_episode}


if __name__ == "__main__":
    main()
