"""``ember.compile`` of whole training steps: bit-identical to eager, step by step, with recapture on change.

Each test trains two copies of one model from the same state, one eagerly and one through ``ember.compile``,
on the same batches and the same random numbers, and requires the losses and every parameter, buffer and
optimizer state to be equal bit for bit after each step.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F

#: 50 steps; on the torch backend the convolutional and GPT models take 12 (its many small kernel calls make
#: them slow on the shared 2-core machine; the MLP still runs 50 there)
LONG = 50 if ember.backends.current() == "numpy" else 12


def _bits(t: Any) -> bytes:
    return np.ascontiguousarray(t.detach().numpy()).tobytes()


def _state_bits(model: nn.Module, opt: Any) -> list[bytes]:
    out = [_bits(p) for p in model.state_dict().values()]
    for st in opt.state_dict()["state"].values():
        out += [_bits(v) if isinstance(v, ember.Tensor) else repr(v).encode() for k, v in sorted(st.items())]
    return out


def train_twins(
    make_model: Callable[[], nn.Module],
    make_opt: Callable[[nn.Module], Any],
    batch: Callable[[int], tuple[Any, ...]],
    steps: int = 50,
    *,
    clip: float | None = None,
    sched: Callable[[Any], Any] | None = None,
    between: Callable[[int, nn.Module, Any], None] | None = None,
    loss_fn: Callable[..., Any] | None = None,
) -> Any:
    """Train an eager and a compiled copy side by side; return the compiled step."""
    m1 = make_model()
    m2 = copy.deepcopy(m1)
    o1, o2 = make_opt(m1), make_opt(m2)
    s1, s2 = (sched(o1), sched(o2)) if sched else (None, None)
    loss_fn = loss_fn or (lambda m, x, y: F.cross_entropy(m(x), y))

    def make(m: nn.Module, o: Any) -> Callable[..., Any]:
        def step(*xy: Any) -> Any:
            o.zero_grad()
            loss = loss_fn(m, *xy)
            loss.backward()
            if clip is not None:
                nn.utils.clip_grad_norm_(m.parameters(), clip)
            o.step()
            return loss

        return step

    eager, compiled = make(m1, o1), ember.compile(make(m2, o2))
    gen = ember.default_generator
    for i in range(steps):
        if between is not None:
            between(i, m1, o1)
            between(i, m2, o2)
        xy = batch(i)
        state = gen.get_state()
        l1 = eager(*xy)
        gen.set_state(state)
        l2 = compiled(*xy)
        assert _bits(l1) == _bits(l2), f"step {i}: loss {l1.item()} != {l2.item()}"
        assert _state_bits(m1, o1) == _state_bits(m2, o2), f"step {i}: parameters or optimizer state differ"
        if s1 is not None:
            s1.step()
            s2.step()
    return compiled


def _batches(shape: tuple[int, ...], classes: int, n: int = 50, dtype: str = "float32") -> Callable[[int], Any]:
    rng = np.random.default_rng(0)
    xs = [ember.tensor(rng.standard_normal(shape).astype(dtype)) for _ in range(n)]
    ys = [ember.tensor(rng.integers(0, classes, shape[0])) for _ in range(n)]
    return lambda i: (xs[i % n], ys[i % n])


def test_mlp_sgd_momentum() -> None:
    step = train_twins(
        lambda: nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 4)),
        lambda m: ember.optim.SGD(m.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-3),
        _batches((8, 6), 4),
    )
    assert step.stats["captures"] == 1 and step.stats["replays"] == 48


class _LeNetDropout(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = ember.models.lenet.LeNet5Config(image_size=12, width=1).init()
        self.drop = nn.Dropout(0.25)

    def forward(self, x: Any) -> Any:
        h = self.net.features(x).flatten(1)
        return self.net.classifier(self.drop(h))


def test_lenet5_adam_dropout() -> None:
    step = train_twins(_LeNetDropout, lambda m: ember.optim.Adam(m.parameters(), lr=1e-3), _batches((4, 1, 12, 12), 10),
                       steps=LONG)  # fmt: skip
    assert step.stats["replays"] == LONG - 2


def _resnet18_cifar() -> nn.Module:
    m = ember.models.resnet.ResNetConfig(18, num_classes=5, width=4).init()
    m.conv1 = nn.Conv2d(3, 4, 3, 1, 1, bias=False)  # the CIFAR stem: 3x3, stride 1, no max pooling
    m.maxpool = nn.Identity()
    return m


def test_resnet18_cifar_batchnorm_adamw_onecycle_clipping() -> None:
    step = train_twins(
        _resnet18_cifar,
        lambda m: ember.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=0.05),
        _batches((2, 3, 4, 4), 5, n=10),
        steps=LONG,
        clip=0.5,
        sched=lambda o: ember.optim.lr_scheduler.OneCycleLR(o, max_lr=0.01, total_steps=60),
    )
    assert step.stats["captures"] == 1


def test_gpt_dropout() -> None:
    cfg = ember.models.gpt.GPTConfig(vocab_size=17, block_size=8, n_layer=1, n_head=2, n_embd=8, dropout=0.1)
    rng = np.random.default_rng(1)
    toks = [ember.tensor(rng.integers(0, 17, (2, 9))) for _ in range(10)]

    def loss(m: Any, t: Any) -> Any:
        logits = m(t[:, :-1])
        return F.cross_entropy(logits.reshape(-1, 17), t[:, 1:].reshape(-1))

    # The embedding's gradient adds repeated tokens' rows into one weight row (index_add). CuPy does that with float
    # atomics, whose order (so the last bit of a row hit three times or more) follows thread timing: two eager steps
    # can differ too (the GPU run's "step 7: parameters or optimizer state differ", in the tied embedding's Adam
    # moment). Bit-equality between two runs needs deterministic kernels there: the switch routes it through the
    # host (ember._determinism), as torch.use_deterministic_algorithms does for PyTorch's CUDA index_add_.
    on_cupy = ember.zeros(1)._backend.name == "cupy"
    ember.use_deterministic_algorithms(on_cupy)
    try:
        step = train_twins(cfg.init, lambda m: ember.optim.AdamW(m.parameters(), lr=3e-3), lambda i: (toks[i % 10],),
                           steps=LONG, loss_fn=loss)  # fmt: skip
    finally:
        ember.use_deterministic_algorithms(False)
    assert step.stats["captures"] == 1


def test_lr_changed_between_steps_stays_live() -> None:
    def between(i: int, m: Any, o: Any) -> None:
        for g in o.param_groups:
            g["lr"] = 0.1 / (1 + i)
            g["momentum"] = 0.5 if i % 2 else 0.9

    step = train_twins(
        lambda: nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Linear(7, 3)),
        lambda m: ember.optim.SGD(m.parameters(), lr=0.1, momentum=0.9),
        _batches((6, 5), 3),
        steps=12,
        between=between,
    )
    assert step.stats["captures"] == 1 and step.stats["replays"] == 10


def test_train_eval_switching_recaptures() -> None:
    def between(i: int, m: Any, o: Any) -> None:
        m.train(i % 3 != 2)

    step = train_twins(
        lambda: nn.Sequential(nn.Linear(5, 9), nn.BatchNorm1d(9), nn.ReLU(), nn.Dropout(0.5), nn.Linear(9, 3)),
        lambda m: ember.optim.SGD(m.parameters(), lr=0.1),
        _batches((6, 5), 3),
        steps=12,
        between=between,
    )
    assert step.stats["captures"] == 2 and len(step.cache) == 2


def test_batch_of_another_size_recaptures() -> None:
    a, b = _batches((6, 5), 3), _batches((4, 5), 3)
    step = train_twins(
        lambda: nn.Sequential(nn.Linear(5, 9), nn.ReLU(), nn.Linear(9, 3)),
        lambda m: ember.optim.Adam(m.parameters()),
        lambda i: a(i) if i % 4 else b(i),
        steps=12,
    )
    assert step.stats["captures"] == 2


def test_cache_full_warns_once_naming_the_argument_then_runs_eagerly() -> None:
    w = ember.randn(3, requires_grad=True)

    @ember.compile
    def f(x: Any) -> Any:
        return (x * w[0]).sum()

    with ember.no_grad():
        f.cache_size = 3
        for n in range(1, 4):
            f(ember.ones(n))
        with pytest.warns(UserWarning, match=r"argument 'x' \(tensor of shape \(3,\).*-> tensor of shape \(7,\)"):
            assert _bits(f(ember.ones(7))) == _bits(f.fn(ember.ones(7)))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            f(ember.ones(8))


def test_python_argument_is_guarded_and_static_tensor_argument_recaptures() -> None:
    def f(x: Any, scale: float, mask: Any) -> Any:
        return x * scale if bool(mask.any()) else x

    c = ember.compile(f, static_argnums=(2,))
    x = ember.randn(4)
    on, off = ember.tensor([True]), ember.tensor([False])
    for scale, mask in ((2.0, on), (2.0, on), (3.0, on), (3.0, off), (3.0, off), (2.0, on)):
        assert _bits(c(x, scale, mask)) == _bits(f(x, scale, mask))
    assert c.stats["captures"] == 3
