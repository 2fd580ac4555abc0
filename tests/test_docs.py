"""Every ```python block of README.md and docs/*.md runs as written.

The blocks of one file run in order in one fresh interpreter (a later block may use an earlier one's
names), in an empty temporary folder. A block that cannot run here opts out with an HTML comment (not
shown on GitHub) on the line just before its fence; use it rarely and say why:

    <!-- docs-test: skip needs a CUDA GPU -->      never run here
    <!-- docs-test: needs torch -->                run only when ``import torch`` works
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_FENCE = re.compile(r"^(```+|~~~+)\s*([\w+-]*)(.*)$")
_MARKER = re.compile(r"^<!--\s*docs-test:\s*(skip|needs)\s+(.+?)\s*-->\s*$")

# Runs in the child: each block compiled under its file and line, so a traceback points at the Markdown.
_RUNNER = """
import json, sys
ns = {"__name__": "__main__"}
for source, line, code in json.load(sys.stdin):
    exec(compile("\\n" * (line - 1) + code, source, "exec"), ns)
"""


def python_blocks(path: Path) -> list[tuple[int, str, str | None]]:
    """(first code line, code, opt-out reason or None) for each ```python block of ``path``."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[tuple[int, str, str | None]] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang = m.group(1), m.group(2).lower()
        start = i + 1
        end = start
        while end < len(lines) and not lines[end].startswith(fence):
            end += 1
        if lang in ("python", "py"):
            marker = _MARKER.match(lines[i - 1].strip()) if i > 0 else None
            reason = None
            if marker and marker.group(1) == "skip":
                reason = f"skip: {marker.group(2)}"
            elif marker and importlib.util.find_spec(marker.group(2)) is None:
                reason = f"needs {marker.group(2)}"
            blocks.append((start + 1, "\n".join(lines[start:end]) + "\n", reason))
        i = end + 1
    return blocks


@pytest.mark.parametrize("path", DOCS, ids=[p.relative_to(ROOT).as_posix() for p in DOCS])
def test_python_blocks_run_as_written(path, tmp_path):
    name = path.relative_to(ROOT).as_posix()
    runnable = [(name, line, code) for line, code, reason in python_blocks(path) if reason is None]
    if not runnable:
        pytest.skip(f"{name} has no Python block to run here")
    proc = subprocess.run([sys.executable, "-c", _RUNNER], input=json.dumps(runnable), capture_output=True,
                          text=True, cwd=tmp_path, timeout=300, check=False)  # fmt: skip
    assert proc.returncode == 0, f"a Python block of {name} failed:\n{proc.stderr[-4000:]}"


def test_the_block_extractor_and_opt_out_markers(tmp_path):
    md = tmp_path / "x.md"
    md.write_text(
        "text\n```python\na = 1\n```\n```bash\nls\n```\n"
        "<!-- docs-test: skip needs a CUDA GPU -->\n```python\nimport cupy\n```\n"
        "<!-- docs-test: needs a_module_that_is_not_there -->\n```python\nb = 2\n```\n"
        "<!-- docs-test: needs json -->\n```py\nc = 3\n```\n"
    )
    assert python_blocks(md) == [
        (3, "a = 1\n", None),
        (10, "import cupy\n", "skip: needs a CUDA GPU"),
        (14, "b = 2\n", "needs a_module_that_is_not_there"),
        (18, "c = 3\n", None),
    ]


def test_a_failing_block_is_reported_with_its_markdown_line(tmp_path):
    runnable = [("GUIDE.md", 7, "x = 1\ny = undefined_name\n")]
    proc = subprocess.run([sys.executable, "-c", _RUNNER], input=json.dumps(runnable), capture_output=True,
                          text=True, cwd=tmp_path, timeout=60, check=False)  # fmt: skip
    assert proc.returncode != 0 and 'File "GUIDE.md", line 8' in proc.stderr and "undefined_name" in proc.stderr
