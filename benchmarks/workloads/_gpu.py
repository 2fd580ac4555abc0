"""The GPU benchmark's extra workloads (``make bench-gpu``): ResNet-18 CIFAR training, large-batch inference,
a float32 GEMM, and their mixed-precision variants, written as a user would in either framework.

On ``--device cuda`` the AMP variants use float16 autocast (+ a GradScaler when training), PyTorch's usual
recipe there; on the CPU (to try them without a GPU) bfloat16 autocast, which on Ember needs the torch
backend.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Callable
from typing import Any

from _convnets import torch_resnet18
from _harness import framework

CIFAR_BATCH = 128
GEMM_N = 4096


def _resnet18(args: argparse.Namespace, num_classes: int) -> Any:
    if args.framework == "ember":
        from ember.models import ResNetConfig

        return ResNetConfig(18, num_classes=num_classes).init(device=args.device)
    return torch_resnet18(num_classes).to(args.device)


def _autocast(lib: Any, args: argparse.Namespace, amp: bool) -> Any:
    if not amp:
        return contextlib.nullcontext()
    dtype = lib.float16 if args.device == "cuda" else lib.bfloat16
    return lib.autocast(args.device, dtype=dtype)


def resnet18_cifar_train_step(args: argparse.Namespace, amp: bool = False) -> Callable[[], Any]:
    """One SGD step (momentum 0.9) of ResNet-18 with 10 classes on a batch of 128 synthetic 32x32 images."""
    lib = framework(args)
    lib.manual_seed(0)
    m = _resnet18(args, 10)
    m.train()
    opt = lib.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
    x = lib.randn(CIFAR_BATCH, 3, 32, 32, device=args.device)
    y = lib.randint(0, 10, (CIFAR_BATCH,), device=args.device)
    scaler = lib.amp.GradScaler(args.device) if amp and args.device == "cuda" else None
    cross_entropy = lib.nn.functional.cross_entropy

    def step() -> None:
        opt.zero_grad()
        with _autocast(lib, args, amp):
            loss = cross_entropy(m(x), y)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()

    return step


def resnet18_infer_step(args: argparse.Namespace, batch: int, amp: bool = False) -> Callable[[], Any]:
    """One no-grad forward pass of ResNet-18 (eval) on ``batch`` synthetic 224x224 images."""
    lib = framework(args)
    lib.manual_seed(0)
    m = _resnet18(args, 1000)
    m.eval()
    x = lib.randn(batch, 3, 224, 224, device=args.device)

    def step() -> None:
        with lib.no_grad(), _autocast(lib, args, amp):
            m(x)

    return step


def gemm_step(args: argparse.Namespace) -> Callable[[], Any]:
    """One (4096, 4096) @ (4096, 4096) float32 matrix product."""
    lib = framework(args)
    lib.manual_seed(0)
    a = lib.randn(GEMM_N, GEMM_N, device=args.device)
    b = lib.randn(GEMM_N, GEMM_N, device=args.device)

    def step() -> None:
        a @ b

    return step
