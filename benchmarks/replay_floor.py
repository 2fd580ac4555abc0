"""The fastest a replayed step can be on the torch backend: PyTorch's own kernels of the step, called from a list.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/replay_floor.py [mlp_sgd lenet5_train ...]

For each workload (PyTorch's model of ``benchmarks/workloads/<name>.py``) it records every aten call of one
PyTorch eager training step (a ``TorchDispatchMode``: forward, autograd's backward kernels, the optimizer's
update), then times (a) the eager step and (b) those calls alone, replayed from the list with the recorded
tensors (no autograd, no modules, no Python between them but the loop). ``ember.compile`` on the torch backend
replays the same kind of list, so ``(a) / (b)`` bounds the speed a compiled step can reach against PyTorch eager
with these kernels. In one process, default threads (``--threads N`` to set them; at one thread the clock is
the thread's CPU time, else wall time); median of 5 rounds.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

sys.path.insert(0, str(pathlib.Path(__file__).parent / "workloads"))

STEPS = {"mlp_sgd": ("_mlp", "mlp_step", ("sgd",)), "lenet5_train": ("lenet5_train", "lenet_step", ())}
STEPS["gpt_train"] = ("gpt_train", "gpt_step", ())


class _Record(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[Any, tuple[Any, ...], dict[str, Any]]] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        self.calls.append((func, args, kwargs))
        return func(*args, **kwargs)


def median_ms(fn: Callable[[], object], n: int) -> float:
    clock = time.thread_time if torch.get_num_threads() == 1 else time.perf_counter  # one thread: its CPU time
    for _ in range(3):
        fn()
    rounds = []
    for _ in range(5):
        t = clock()
        for _ in range(n):
            fn()
        rounds.append((clock() - t) / n)
    return sorted(rounds)[2] * 1e3


def floor(name: str, n: int) -> tuple[float, float, int]:
    module, fn, extra = STEPS[name]
    args = argparse.Namespace(framework="torch", backend="torch", device="cpu", seconds=1, compile=False)
    step = getattr(__import__(module), fn)(args, *extra)
    for _ in range(3):
        step()
    with _Record() as rec:
        step()
    calls = [(func._op, a, k) for func, a, k in rec.calls if func._schema.name != "aten::_local_scalar_dense"]

    def replay() -> None:
        for op, a, k in calls:
            op(*a, **k)

    eager = median_ms(step, n)
    with torch.no_grad():  # (the recorded calls are kernels on plain tensors: nothing to record)
        return eager, median_ms(replay, n), len(calls)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("workloads", nargs="*", default=["mlp_sgd", "lenet5_train"])
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("-n", type=int, default=20, help="steps per round")
    a = p.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    for name in a.workloads:
        eager, kernels, count = floor(name, a.n)
        print(
            f"{name}: PyTorch eager step {eager:.2f} ms; its {count} aten calls replayed from a list {kernels:.2f} ms; "
            f"bound on a replay's speed against PyTorch eager {eager / kernels:.2f}x ({torch.get_num_threads()} thr.)"
        )


if __name__ == "__main__":
    main()
