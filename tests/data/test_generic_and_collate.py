"""``torch.utils.data``'s generic classes (``class D(Dataset[tuple[Tensor, int]])``), ``ConcatDataset.cumulative_sizes``
and ``torch.utils.data._utils.collate``'s extensible ``collate``, run as the same code under both libraries."""

from __future__ import annotations

from typing import Any

import pytest

import ember

torch = pytest.importorskip("torch")


def _story(lib: Any) -> list[Any]:
    import importlib

    data = lib.utils.data
    coll = importlib.import_module(f"{lib.__name__}.utils.data._utils.collate")

    class Pairs(data.Dataset[tuple[int, float]]):
        def __len__(self) -> int:
            return 3

        def __getitem__(self, i: int) -> tuple[int, float]:
            return i, i / 2

    class Stream(data.IterableDataset[int]):
        def __iter__(self) -> Any:
            return iter(range(4))

    class Every2(data.Sampler[int]):
        def __init__(self, n: int) -> None:
            self.n = n

        def __iter__(self) -> Any:
            return iter(range(0, self.n, 2))

        def __len__(self) -> int:
            return (self.n + 1) // 2

    out: list[Any] = []
    out.append([[b.tolist() for b in batch] for batch in data.DataLoader(Pairs(), batch_size=2)])
    out.append([b.tolist() for b in data.DataLoader(Stream(), batch_size=3)])
    out.append([batch[0].tolist() for batch in data.DataLoader(Pairs(), sampler=Every2(3))])
    out.append(data.ConcatDataset([Pairs(), Pairs()]).cumulative_sizes)
    out.append([type(data.Subset[int]).__name__, type(data.DataLoader[int]).__name__])

    class Box:
        def __init__(self, v: int) -> None:
            self.v = v

    def boxes(batch: Any, *, collate_fn_map: Any = None) -> Any:
        return [b.v for b in batch]

    fmap = {**coll.default_collate_fn_map, Box: boxes}
    got = coll.collate([(Box(1), 2.0, {"k": lib.ones(2)}), (Box(3), 4.0, {"k": lib.zeros(2)})], collate_fn_map=fmap)
    out.append((got[0], got[1].tolist(), str(got[1].dtype).split(".")[1], got[2]["k"].tolist()))
    try:
        coll.collate([object()], collate_fn_map=coll.default_collate_fn_map)
    except TypeError as e:
        out.append(str(e).split("found")[0])
    return out


def test_generic_datasets_and_extensible_collate_as_pytorch() -> None:
    assert _story(ember) == _story(torch)
