"""A stand-in for ``torch.cuda``'s graphs on torch-CPU, so that ``_compile/_cuda_graph.py`` runs without a GPU.

It keeps what a CUDA graph does to a program: capture launches nothing (each aten call is run for its result's
shape, then every tensor it wrote is put back, and the results are filled with NaN, the garbage a capture leaves);
a replay runs the recorded aten calls again on the same tensor objects (the same memory), with every Python value
baked in as captured — a learning rate passed as a float stays the captured one — and writes each result into the
captured result's memory (a graph's outputs live at fixed addresses). A host read during capture raises, as CUDA's
stream capture refuses a synchronisation. Not collected (no ``test_`` prefix); ``install(monkeypatch)`` sets it up.
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ember._compile import _cuda_graph

aten = torch.ops.aten


def _tensors(x: Any) -> list[torch.Tensor]:
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, tuple | list):
        return [t for v in x for t in _tensors(v)]
    return []


def _same_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    return (a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr() and a.storage_offset() ==
            b.storage_offset() and a.shape == b.shape and a.stride() == b.stride())  # fmt: skip


def _written(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[torch.Tensor]:
    out = []
    for i, arg in enumerate(func._schema.arguments):
        info = arg.alias_info
        if info is not None and info.is_write:
            out += _tensors(kwargs.get(arg.name, args[i] if i < len(args) else None))
    return out


class _Capture(TorchDispatchMode):
    def __init__(self, graph: FakeCUDAGraph) -> None:
        super().__init__()
        self.graph = graph

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if func is aten._local_scalar_dense.default:
            raise RuntimeError("CUDA graph stand-in: a read back to the host while the stream is capturing")
        written = _written(func, args, kwargs)
        before = [t.clone() for t in written]
        res = func(*args, **kwargs)
        for t, b in zip(written, before, strict=True):  # a capture launches nothing
            t.copy_(b)
        self.graph.calls.append((func, args, kwargs, res))
        seen = {t.untyped_storage().data_ptr() for t in _tensors((args, kwargs))}
        self.graph.made += [r for r in _tensors(res) if r.untyped_storage().data_ptr() not in seen]  # not a view
        return res


class FakeCUDAGraph:
    """``torch.cuda.CUDAGraph`` on the CPU (see the module docstring)."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, tuple[Any, ...], dict[str, Any], Any]] = []
        self.made: list[torch.Tensor] = []
        self.replays = 0

    def replay(self) -> None:
        for func, args, kwargs, res in self.calls:
            new = func(*args, **kwargs)
            for old, fresh in zip(_tensors(res), _tensors(new), strict=True):
                if old is not fresh and not _same_memory(old, fresh):
                    old.copy_(fresh)
        self.replays += 1


class _Stream:
    def wait_stream(self, other: Any) -> None:
        pass


@contextlib.contextmanager
def _graph(g: FakeCUDAGraph) -> Any:
    mode = _Capture(g)
    with mode:
        yield
    for t in g.made:  # what a capture leaves in its outputs: not the values
        if t.is_floating_point():
            t.fill_(float("nan"))
    GRAPHS.append(g)


GRAPHS: list[FakeCUDAGraph] = []


def install(monkeypatch: Any) -> list[FakeCUDAGraph]:
    """Graph torch-CPU programs through the stand-in for the test; returns the list of graphs it makes."""
    GRAPHS.clear()
    monkeypatch.setattr(_cuda_graph, "DEVICE_TYPES", ("cuda", "cpu"))
    monkeypatch.setattr(torch.cuda, "CUDAGraph", FakeCUDAGraph)
    monkeypatch.setattr(torch.cuda, "graph", _graph)
    monkeypatch.setattr(torch.cuda, "Stream", _Stream)
    monkeypatch.setattr(torch.cuda, "stream", lambda s: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "current_stream", lambda *a: _Stream())
    return GRAPHS
