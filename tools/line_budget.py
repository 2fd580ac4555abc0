"""The line budget: no source file passes 500 lines (``make lint`` runs this; tinygrad keeps a budget the same way).

A module short enough to read in one sitting is a module named for one thing; a file that grows past the budget
is split by what its parts hold. Usage: ``python tools/line_budget.py [ROOT ...] [--max N]`` (default ``src``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

BUDGET = 500


def over_budget(roots: list[Path], limit: int = BUDGET) -> list[tuple[Path, int]]:
    """``(file, lines)`` for every ``.py`` file under ``roots`` longer than ``limit`` lines, longest first."""
    found = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            n = len(path.read_text(encoding="utf-8").splitlines())
            if n > limit:
                found.append((path, n))
    return sorted(found, key=lambda item: -item[1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("roots", nargs="*", default=[Path("src")], type=Path)
    parser.add_argument("--max", type=int, default=BUDGET, help="the most lines a file may have (default 500)")
    args = parser.parse_args(argv)
    found = over_budget(args.roots, args.max)
    for path, n in found:
        print(f"{path}: {n} lines, over the budget of {args.max}: split it by what its parts hold")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
