"""Distributed training, Ember against torch.distributed and PyTorch's DDP: 2 gloo processes on this machine.

    python benchmarks/bench_distributed.py [--pairs K] [--seconds S] [--backend numpy|torch] [--only TASK ...]

Tasks (each a pair of fresh 2-process runs per framework, the order alternating from pair to pair):

- ``allreduce_1mb``, ``allreduce_64mb``: ``all_reduce`` of a float32 buffer; the value is the algorithm bandwidth
  (bytes / time). Ember runs ``ember.distributed.all_reduce`` on an Ember tensor (zero-copy hand-over), once as
  shipped (the cross-rank call check on: one 128-byte all-gather first) and once with the check off
  (``EMBER_DISTRIBUTED_CHECKS=0``: the wrapper alone); PyTorch runs ``torch.distributed.all_reduce``.
- ``ddp_mlp``: MLP 784-512-512-10, batch 128 per rank, SGD, wrapped in each framework's DistributedDataParallel;
  samples/s over both ranks. Each run also measures the overlap: the DDP step against its parts one after the
  other (the same step without communication, then one all-reduce of all gradients as one flat buffer).

Every process gets one thread (``OMP_NUM_THREADS=1``, as torchrun sets by default: two ranks share the two
cores). Run it with ``OPENBLAS_CORETYPE`` and ``OPENBLAS_L2_SIZE`` unset. Prints the median ratio
Ember/PyTorch (above 1: Ember is faster) with its min-max over the pairs.
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

TASKS = ("allreduce_1mb", "allreduce_64mb", "ddp_mlp")
BATCH = 128


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- inside one rank ----------------------------------------------------------------------------------------
def _timed(step: Callable[[], Any], sync: Any, seconds: float, rounds: int = 7) -> list[float]:
    """Per-step times: warm up, then ``rounds`` rounds of a number of steps rank 0 picks (``sync``: barrier, agree)."""
    barrier, agree = sync
    for _ in range(3):
        step()
    barrier()
    t0 = time.perf_counter()
    step()
    one = time.perf_counter() - t0
    per = max(1, min(200, int(seconds / rounds / max(one, 1e-6))))
    per_box = [per]
    times = []
    agree(per_box)
    for _ in range(rounds):
        barrier()
        t = time.perf_counter()
        for _ in range(per_box[0]):
            step()
        times.append((time.perf_counter() - t) / per_box[0])
    return times


def worker(args: argparse.Namespace) -> None:
    fw = args.framework
    size = {"allreduce_1mb": 2**20, "allreduce_64mb": 2**26}.get(args.task, 0)
    if fw == "torch":
        import torch
        import torch.distributed as tdist

        tdist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}", rank=args.rank, world_size=2)
        barrier = tdist.barrier
    else:
        os.environ.setdefault("EMBER_BACKEND", args.backend)
        if fw == "ember_unchecked":
            os.environ["EMBER_DISTRIBUTED_CHECKS"] = "0"
        import ember
        import ember.distributed as edist

        edist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}", rank=args.rank, world_size=2)
        barrier = edist.barrier
        import torch.distributed as tdist

    def agree(box: list[int]) -> None:
        tdist.broadcast_object_list(box, src=0)

    sync = (barrier, agree)
    out: dict[str, Any] = {"task": args.task, "framework": fw}
    if size:
        if fw == "torch":
            buf = torch.ones(size // 4)
            times = _timed(lambda: tdist.all_reduce(buf), sync, args.seconds)
        else:
            ebuf = ember.ones(size // 4)
            times = _timed(lambda: edist.all_reduce(ebuf), sync, args.seconds)
        med = statistics.median(times)
        out.update(value=size / med / 1e6, unit="MB/s", ms=med * 1e3)
    else:
        out.update(_ddp(fw, args, sync))
    if args.rank == 0:
        print(json.dumps(out), flush=True)
    tdist.destroy_process_group()


def _ddp(fw: str, args: argparse.Namespace, sync: Any) -> dict[str, Any]:
    lib: Any
    if fw == "torch":
        import torch as lib
        from torch.nn.parallel import DistributedDataParallel as Ddp

        all_reduce = lib.distributed.all_reduce
    else:
        import ember as lib
        from ember.distributed import all_reduce
        from ember.nn.parallel import DistributedDataParallel as Ddp
    lib.manual_seed(args.rank)
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

    model = mlp()
    ddp_step = stepper(Ddp(model), model.parameters())
    local = mlp()
    local_step = stepper(local, local.parameters())
    flat = lib.zeros(sum(p.numel() for p in local.parameters()))
    if fw != "torch":  # what DDP's buckets use: the collective without the per-call cross-rank check
        lib.distributed.set_collective_checks(False)
    # the three measured in turns, round by round, so that a neighbour's load falls on all of them
    parts: dict[str, list[float]] = {"ddp": [], "local": [], "ar": []}
    for _ in range(5):
        parts["ddp"] += _timed(ddp_step, sync, args.seconds / 5, rounds=1)
        parts["local"] += _timed(local_step, sync, args.seconds / 10, rounds=1)
        parts["ar"] += _timed(lambda: all_reduce(flat), sync, args.seconds / 10, rounds=1)
    t_ddp, t_local, t_ar = (statistics.median(parts[k]) for k in ("ddp", "local", "ar"))
    serial = t_local + t_ar
    return {
        "value": 2 * BATCH / t_ddp,
        "unit": "samples/s",
        "step_ms": t_ddp * 1e3,
        "compute_ms": t_local * 1e3,
        "allreduce_ms": t_ar * 1e3,
        "hidden_fraction": (serial - t_ddp) / t_ar,
    }


# -- the comparison -----------------------------------------------------------------------------------------
def run(task: str, framework: str, args: argparse.Namespace) -> dict[str, Any]:
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
        "--framework",
        framework,
        "--port",
        str(port),
        "--seconds",
        str(args.seconds),
        "--backend",
        args.backend,
    ]
    procs = [
        subprocess.Popen([*cmd, "--rank", str(r)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for r in range(2)
    ]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (_, err) in zip(procs, outs, strict=True):
        if p.returncode != 0:
            raise RuntimeError(f"{task} ({framework}) failed:\n{err[-3000:]}")
    return dict(json.loads(outs[0][0].strip().splitlines()[-1]))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=5)
    p.add_argument("--seconds", type=float, default=2.0, help="timed steady state per measurement")
    p.add_argument("--backend", choices=["numpy", "torch"], default="numpy", help="Ember's backend")
    p.add_argument("--only", nargs="*", choices=TASKS, default=list(TASKS))
    p.add_argument("--json", help="also write every run to this file")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--task", help=argparse.SUPPRESS)
    p.add_argument("--framework", help=argparse.SUPPRESS)
    p.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(args)
        return
    runs: list[dict[str, Any]] = []
    for task in args.only:
        frameworks = ["ember", "ember_unchecked", "torch"] if task.startswith("allreduce") else ["ember", "torch"]
        ratios: dict[str, list[float]] = {fw: [] for fw in frameworks if fw != "torch"}
        for k in range(args.pairs):
            order = frameworks if k % 2 == 0 else frameworks[::-1]
            pair = {fw: run(task, fw, args) for fw in order}
            runs.append({"task": task, **pair})
            for fw in ratios:
                ratios[fw].append(pair[fw]["value"] / pair["torch"]["value"])
        for fw, rs in ratios.items():
            vals = [r[fw]["value"] for r in runs if r["task"] == task]
            tvals = [r["torch"]["value"] for r in runs if r["task"] == task]
            print(
                f"{task:15s} {fw:16s} {statistics.median(vals):10.1f} vs torch {statistics.median(tvals):10.1f} "
                f"{runs[-1][fw]['unit']}: ratio {statistics.median(rs):.3f} ({min(rs):.3f}-{max(rs):.3f})"
            )
        if task == "ddp_mlp":
            for fw in frameworks:
                rs = [r[fw] for r in runs if r["task"] == task]
                med = {
                    k: statistics.median(r[k] for r in rs)
                    for k in ("step_ms", "compute_ms", "allreduce_ms", "hidden_fraction")
                }
                print(
                    f"{'':15s} {fw:16s} step {med['step_ms']:.2f} ms vs compute {med['compute_ms']:.2f} + all-reduce "
                    f"{med['allreduce_ms']:.2f} ms run serially: {med['hidden_fraction']:.0%} of the all-reduce "
                    "hidden behind backward"
                )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(runs, f, indent=1)


if __name__ == "__main__":
    main()
