"""A graph convolutional network (Kipf & Welling) on a synthetic graph with a sparse adjacency, as a PyTorch program.

    python examples/gcn_sparse.py                     # Ember: a two-community graph, 2-layer GCN
    python examples/gcn_sparse.py --lib torch         # the same program on PyTorch
    python examples/gcn_sparse.py --nodes 2000 --classes 5 --epochs 200

The graph is a stochastic block model (dense edges inside a class, sparse across); node features are
noisy class signals. The adjacency is a sparse COO tensor: self-loops are added with a sparse identity
(``adj + eye``), degrees come from ``torch.sparse.sum``, the normalisation ``D^-1/2 (A + I) D^-1/2``
is a product of sparse tensors with dense ones, and each layer propagates with ``torch.sparse.mm``.
"""

from __future__ import annotations

import argparse
import importlib
from typing import Any


def synthetic_graph(torch: Any, nodes: int, classes: int, features: int, p_in: float, p_out: float,
                    seed: int) -> tuple[Any, Any, Any]:  # fmt: skip
    """(edge index (2, E), features (N, F), labels (N,)) of a stochastic block model, the same in both libraries."""
    import numpy as np

    rng = np.random.default_rng(seed)
    labels = rng.integers(0, classes, nodes)
    same = labels[:, None] == labels[None, :]
    upper = np.triu(rng.random((nodes, nodes)) < np.where(same, p_in, p_out), 1)
    src, dst = np.nonzero(upper | upper.T)
    centers = rng.standard_normal((classes, features))
    x = centers[labels] * 0.3 + rng.standard_normal((nodes, features))
    return (torch.tensor(np.stack([src, dst]), dtype=torch.long), torch.tensor(x, dtype=torch.float32),
            torch.tensor(labels, dtype=torch.long))  # fmt: skip


def normalized_adjacency(torch: Any, edges: Any, n: int) -> Any:
    """``D^-1/2 (A + I) D^-1/2`` as a sparse COO tensor."""
    adj = torch.sparse_coo_tensor(edges, torch.ones(edges.shape[1]), (n, n))
    eye = torch.sparse_coo_tensor(torch.stack([torch.arange(n), torch.arange(n)]), torch.ones(n), (n, n))
    adj = (adj + eye).coalesce()
    deg = torch.sparse.sum(adj, dim=1).to_dense()
    inv_sqrt = deg.pow(-0.5)
    rows, cols = adj.indices()
    return torch.sparse_coo_tensor(adj.indices(), adj.values() * inv_sqrt[rows] * inv_sqrt[cols], (n, n))


def build(torch: Any, n_in: int, n_hidden: int, n_out: int, dropout: float) -> Any:
    nn, F = torch.nn, torch.nn.functional

    class GraphConv(nn.Module):
        def __init__(self, n_in: int, n_out: int) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.empty(n_in, n_out))
            self.bias = nn.Parameter(torch.zeros(n_out))
            nn.init.xavier_uniform_(self.weight)

        def forward(self, x: Any, adj: Any) -> Any:
            return torch.sparse.mm(adj, x @ self.weight) + self.bias

    class GCN(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.gc1, self.gc2 = GraphConv(n_in, n_hidden), GraphConv(n_hidden, n_out)

        def forward(self, x: Any, adj: Any) -> Any:
            x = F.dropout(F.relu(self.gc1(x, adj)), dropout, self.training)
            return F.log_softmax(self.gc2(x, adj), dim=1)

    return GCN()


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lib", default="ember", choices=["ember", "torch"])
    p.add_argument("--nodes", type=int, default=300)
    p.add_argument("--classes", type=int, default=3)
    p.add_argument("--features", type=int, default=16)
    p.add_argument("--hidden", type=int, default=16)
    p.add_argument("--epochs", type=int, default=100)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--weight-decay", type=float, default=5e-4)
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    torch = importlib.import_module(args.lib)
    torch.manual_seed(args.seed)
    edges, x, y = synthetic_graph(torch, args.nodes, args.classes, args.features, 0.1, 0.01, args.seed)
    adj = normalized_adjacency(torch, edges, args.nodes)
    perm = torch.randperm(args.nodes)
    n_train = args.nodes // 2
    train, test = perm[:n_train], perm[n_train:]
    model = build(torch, args.features, args.hidden, args.classes, args.dropout)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    losses = []
    for _ in range(args.epochs):
        model.train()
        opt.zero_grad()
        loss = torch.nn.functional.nll_loss(model(x, adj)[train], y[train])
        loss.backward()
        opt.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        pred = model(x, adj).argmax(1)
    acc = (pred[test] == y[test]).float().mean().item()
    print(f"{args.lib}: {edges.shape[1]} edges, loss {losses[0]:.3f} -> {losses[-1]:.3f}, test accuracy {acc:.3f}")
    return {"losses": losses, "test_accuracy": acc, "edges": int(edges.shape[1])}


if __name__ == "__main__":
    main()
