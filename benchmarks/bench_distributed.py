"""Distributed training, Ember against torch.distributed and PyTorch's DDP: 2 gloo processes on this machine.

    python benchmarks/bench_distributed.py [--pairs K] [--seconds S] [--backend numpy|torch] [--only TASK ...]

Both frameworks run in the same two processes, in turns, round by round (a neighbour's load falls on both
alike; on this shared 2-core machine separate runs differ by 2x from minute to minute), and each of the
``--pairs`` measurements starts fresh processes. Tasks:

- ``allreduce_1mb``, ``allreduce_64mb``: ``all_reduce`` of a float32 buffer; the value is the algorithm bandwidth
  (bytes / time). Ember runs ``ember.distributed.all_reduce`` on an Ember tensor (zero-copy hand-over) in the
  three cross-rank check modes: as shipped (``ember``: a repeated call is not exchanged again),
  ``ember_check_all`` (one 128-byte all-gather before every call) and ``ember_unchecked`` (the wrapper alone);
  PyTorch runs ``torch.distributed.all_reduce`` on a torch tensor.
- ``ddp_mlp``: MLP 784-512-512-10, batch 128 per rank, SGD, in each framework's DistributedDataParallel;
  samples/s over both ranks (``--bucket-view``: both with ``gradient_as_bucket_view=True``). Also the
  overlap: the DDP step against the same step without DDP followed by one all-reduce of a buffer the size of
  all gradients (compute, then communication: no overlap); the difference over the all-reduce's own time is
  the share of the communication hidden behind backward.

Every process gets one thread (``OMP_NUM_THREADS=1``, as torchrun sets by default: two ranks share the two
cores). Run it with ``OPENBLAS_CORETYPE`` and ``OPENBLAS_L2_SIZE`` unset. Ratios are Ember/PyTorch (above 1:
Ember is faster), the median over all rounds of all pairs, with the min-max of the per-pair medians.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

TASKS = ("allreduce_1mb", "allreduce_64mb", "ddp_mlp", "ddp_mlp_compiled")
BATCH = 128
ROUNDS = 9


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- inside one rank ----------------------------------------------------------------------------------------
class _Clock:
    """Times steps that are collectives: both ranks run the same number of steps, between barriers."""

    def __init__(self, tdist: Any, seconds: float) -> None:
        self.tdist, self.seconds = tdist, seconds
        self.counts: dict[str, int] = {}

    def per_step(self, name: str, step: Callable[[], Any]) -> float:
        if name not in self.counts:  # warm up, then rank 0 picks how many steps make one round
            for _ in range(3):
                step()
            self.tdist.barrier()
            t0 = time.perf_counter()
            step()
            box = [max(1, min(500, int(self.seconds / ROUNDS / max(time.perf_counter() - t0, 1e-6))))]
            self.tdist.broadcast_object_list(box, src=0)
            self.counts[name] = box[0]
        n = self.counts[name]
        self.tdist.barrier()
        t = time.perf_counter()
        for _ in range(n):
            step()
        return (time.perf_counter() - t) / n


def worker(args: argparse.Namespace) -> None:
    os.environ["EMBER_BACKEND"] = args.backend
    import torch
    import torch.distributed as tdist

    import ember
    import ember.distributed as edist

    edist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}", rank=args.rank, world_size=2)
    clock = _Clock(tdist, args.seconds)
    rounds: list[dict[str, float]] = []
    if args.task.startswith("allreduce"):
        size = 2**20 if args.task == "allreduce_1mb" else 2**26
        tbuf, ebuf = torch.ones(size // 4), ember.ones(size // 4)

        def in_mode(mode: str) -> Callable[[], None]:
            def step() -> None:
                edist.set_collective_checks(mode)
                edist.all_reduce(ebuf)
                edist.set_collective_checks("new")

            return step

        steps = {
            "torch": lambda: tdist.all_reduce(tbuf),
            "ember": lambda: edist.all_reduce(ebuf),
            "ember_check_all": in_mode("all"),
            "ember_unchecked": in_mode("off"),
        }
        for _ in range(ROUNDS):
            rounds.append({k: size / clock.per_step(k, f) / 1e6 for k, f in steps.items()})
    elif args.task == "ddp_mlp_compiled":
        eager = _ddp_parts("ember", args.rank, args.bucket_view)[0]
        steps = {"eager": eager, "compiled": ember.compile(_ddp_parts("ember", args.rank, args.bucket_view)[0])}
        edist.set_collective_checks(False)
        for _ in range(ROUNDS):
            rounds.append({k: 2 * BATCH / clock.per_step(k, f) for k, f in steps.items()})
            rounds[-1]["load"] = os.getloadavg()[0]
        assert steps["compiled"].stats["replays"] > 0 and steps["compiled"].stats["eager"] == 0
    else:
        parts = {fw: _ddp_parts(fw, args.rank, args.bucket_view) for fw in ("torch", "ember")}
        for _ in range(ROUNDS):
            r = {}
            for fw, (ddp_step, local_step, flat_all_reduce) in parts.items():
                edist.set_collective_checks(False)  # what DDP's buckets use: no per-call cross-rank check

                def serial(local_step: Any = local_step, flat_all_reduce: Any = flat_all_reduce) -> None:
                    local_step()
                    flat_all_reduce()

                r[f"{fw}:step"] = clock.per_step(f"{fw}:step", ddp_step)
                r[f"{fw}:serial"] = clock.per_step(f"{fw}:serial", serial)
                r[f"{fw}:compute"] = clock.per_step(f"{fw}:compute", local_step)
                r[f"{fw}:allreduce"] = clock.per_step(f"{fw}:allreduce", flat_all_reduce)
                edist.set_collective_checks("new")
                r[fw] = 2 * BATCH / r[f"{fw}:step"]
            rounds.append(r)
    if args.rank == 0:
        print(json.dumps(rounds), flush=True)
    edist.destroy_process_group()


def _ddp_parts(
    fw: str, rank: int, bucket_view: bool = False
) -> tuple[Callable[[], Any], Callable[[], Any], Callable[[], Any]]:
    """The DDP step, the same step without DDP, and one all-reduce of a buffer of all the gradients."""
    lib: Any
    if fw == "torch":
        import torch as lib
        from torch.nn.parallel import DistributedDataParallel as Ddp

        all_reduce = lib.distributed.all_reduce
    else:
        import ember as lib
        from ember.distributed import all_reduce
        from ember.nn.parallel import DistributedDataParallel as Ddp
    lib.manual_seed(rank)
    nn = lib.nn

    def mlp() -> Any:
        return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))

    x, y = lib.randn(BATCH, 784), lib.randint(0, 10, (BATCH,))
    ce = lib.nn.functional.cross_entropy

    def stepper(net: Any, params: Any) -> Callable[[], Any]:
        opt = lib.optim.SGD(params, lr=0.01)

        def step() -> Any:
            opt.zero_grad()
            loss = ce(net(x), y)
            loss.backward()
            opt.step()
            return loss

        return step

    model, local = mlp(), mlp()
    flat = lib.zeros(sum(p.numel() for p in local.parameters()))
    ddp = Ddp(model, gradient_as_bucket_view=bucket_view)
    return stepper(ddp, model.parameters()), stepper(local, local.parameters()), lambda: all_reduce(flat)


# -- the comparison -----------------------------------------------------------------------------------------
def run(task: str, args: argparse.Namespace) -> list[dict[str, float]]:
    port = _free_port()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        env.pop(var, None)
    cmd = [
        sys.executable,
        __file__,
        "--worker",
        "--task",
        task,
        "--port",
        str(port),
        "--seconds",
        str(args.seconds),
        "--backend",
        args.backend,
        *(["--bucket-view"] if args.bucket_view else []),
    ]
    procs = [
        subprocess.Popen([*cmd, "--rank", str(r)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for r in range(2)
    ]
    outs = [p.communicate(timeout=900) for p in procs]
    for p, (_, err) in zip(procs, outs, strict=True):
        if p.returncode != 0:
            raise RuntimeError(f"{task} failed:\n{err[-3000:]}")
    return list(json.loads(outs[0][0].strip().splitlines()[-1]))


def _summary(task: str, pairs: list[list[dict[str, float]]]) -> list[str]:
    if task == "ddp_mlp_compiled":
        med = {k: statistics.median(r[k] for p in pairs for r in p) for k in ("eager", "compiled", "load")}
        per_pair = [statistics.median(r["compiled"] / r["eager"] for r in p) for p in pairs]
        ratio = statistics.median(r["compiled"] / r["eager"] for p in pairs for r in p)
        return [
            f"{task:15s} compiled {med['compiled']:9.1f} vs eager {med['eager']:9.1f} samples/s: ratio {ratio:.3f} "
            f"(pairs {min(per_pair):.3f}-{max(per_pair):.3f}); load average {med['load']:.1f}"
        ]
    lines = []
    for fw in [k for k in pairs[0][0] if k.startswith("ember") and ":" not in k]:
        ratios = [r[fw] / r["torch"] for p in pairs for r in p]
        per_pair = [statistics.median(r[fw] / r["torch"] for r in p) for p in pairs]
        value = statistics.median(r[fw] for p in pairs for r in p)
        ref = statistics.median(r["torch"] for p in pairs for r in p)
        unit = "samples/s" if task == "ddp_mlp" else "MB/s"
        lines.append(
            f"{task:15s} {fw:16s} {value:9.1f} vs torch {ref:9.1f} {unit}: ratio "
            f"{statistics.median(ratios):.3f} (pairs {min(per_pair):.3f}-{max(per_pair):.3f})"
        )
    if task == "ddp_mlp":
        for fw in ("ember", "torch"):
            med = {
                k: 1e3 * statistics.median(r[f"{fw}:{k}"] for p in pairs for r in p)
                for k in ("step", "serial", "compute", "allreduce")
            }
            hidden = [(r[f"{fw}:serial"] - r[f"{fw}:step"]) / r[f"{fw}:allreduce"] for p in pairs for r in p]
            lines.append(
                f"{'':15s} {fw:16s} DDP step {med['step']:.2f} ms; the same step then one all-reduce of all "
                f"gradients {med['serial']:.2f} ms (compute alone {med['compute']:.2f}, all-reduce alone "
                f"{med['allreduce']:.2f}): {statistics.median(hidden):.0%} of the all-reduce hidden behind backward"
            )
    return lines


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=3, help="measurements, each in 2 fresh processes")
    p.add_argument("--seconds", type=float, default=2.0, help="timed steady state per variant and measurement")
    p.add_argument("--backend", choices=["numpy", "torch"], default="numpy", help="Ember's backend")
    p.add_argument("--only", nargs="*", choices=TASKS, default=list(TASKS))
    p.add_argument("--json", help="also write every round to this file")
    p.add_argument(
        "--bucket-view", action="store_true", help="both DDPs with gradient_as_bucket_view=True (default: False)"
    )
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--task", help=argparse.SUPPRESS)
    p.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(args)
        return
    every = {}
    for task in args.only:
        every[task] = [run(task, args) for _ in range(args.pairs)]
        print("\n".join(_summary(task, every[task])), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(every, f, indent=1)


if __name__ == "__main__":
    main()
