"""Run every benchmark script in this folder, one after another."""

from __future__ import annotations

import pathlib
import runpy

if __name__ == "__main__":
    here = pathlib.Path(__file__).parent
    for script in sorted(here.glob("bench_*.py")):
        print(f"\n== {script.name} ==")
        runpy.run_path(str(script), run_name="__main__")
