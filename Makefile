# `make demo` and `make test` each set up everything they need on a fresh machine.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck unit test-mixed test-accel test-cuda docs bench bench-gpu bench-micro clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# dev = the tools plus every optional extra the tests exercise (record, vision, tensorboard, data, plot, docs);
# torch (CPU build), expecttest (PyTorch's operator database imports it), transformers (Hugging Face parity),
# accelerate/PEFT/torchmetrics/Pyro/x-transformers/Lightning/sentence-transformers/torchdiffeq (--no-deps: never
# another torch) and pnnx on top, each skipped cleanly if pip cannot get it.
$(STAMP): $(PY) pyproject.toml
	$(PY) -m pip install -q -e ".[dev]"
	$(PY) -m pip install -q "torch==2.13.0" || echo "torch not installed: PyTorch parity tests will be skipped"
	$(PY) -m pip install -q "expecttest>=0.2" || echo "expecttest not installed: PyTorch operator-database tests will be skipped"
	$(PY) -m pip install -q "transformers>=4.40" || echo "transformers not installed: Hugging Face parity tests will be skipped"
	$(PY) -m pip install -q --no-deps "pnnx==20261020" || echo "pnnx not installed: PNNX export tests will be skipped"
	$(PY) -m pip install -q "einops>=0.8" || echo "einops not installed: the einops program will check nothing"
	$(PY) -m pip install -q --no-deps "accelerate>=1.15" "peft>=0.21" "psutil>=5.9" "torchmetrics>=1.9" \
		"lightning-utilities>=0.15" || echo "accelerate/peft/torchmetrics not installed: their tests will be skipped"
	$(PY) -m pip install -q --no-deps "pyro-ppl>=1.9" "pyro-api>=0.1.2" "opt_einsum>=3.3" \
		|| echo "pyro-ppl not installed: the Pyro test will be skipped"
	$(PY) -m pip install -q --no-deps "x-transformers>=2.31" "einx>=0.4" "frozendict>=2.4" "loguru>=0.7" \
		"torch-einops-utils>=0.2" || echo "x-transformers not installed: its test will be skipped"
	$(PY) -m pip install -q --no-deps "pytorch-lightning>=2.6" "fsspec>=2022.5" \
		|| echo "pytorch-lightning not installed: its test will be skipped"
	$(PY) -m pip install -q --no-deps "sentence-transformers>=6.2" \
		|| echo "sentence-transformers not installed: its test will be skipped"
	$(PY) -m pip install -q --no-deps "torchdiffeq>=0.2.5" || echo "torchdiffeq not installed: its test will be skipped"
	$(PY) -m pip install -q -e ".[onnx]" || echo "onnx/onnxruntime not installed: ember.onnx tests will be skipped"
	touch $(STAMP)

DEMO_STAMP := $(VENV)/.demo-installed

$(DEMO_STAMP): $(PY) pyproject.toml
	$(PY) -m pip install -q -e ".[examples]"
	touch $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	$(VENV)/bin/ember train digits-cnn

LINT_PATHS := $(wildcard src tests benchmarks examples tools)

# style, the floors (no module imports a layer above its own: .importlinter, docs/architecture.md "Floors")
# and the line budget (no source file passes 500 lines)
lint: $(STAMP)
	$(VENV)/bin/ruff check $(LINT_PATHS)
	$(VENV)/bin/ruff format --check $(LINT_PATHS)
	PYTHONPATH=src $(VENV)/bin/lint-imports
	$(PY) tools/line_budget.py src

typecheck: $(STAMP)
	$(VENV)/bin/mypy

# the whole suite twice: on the default (numpy) backend, then on torch (EMBER_BACKEND=torch; skipped without torch);
# then, once, the wheel installed in fresh virtualenvs (tests/test_packaging.py, marked `wheel`)
unit: $(STAMP)
	$(PY) -m pytest -n 2 --dist loadfile
	if $(PY) -c "import torch" 2>/dev/null; then EMBER_BACKEND=torch $(PY) -m pytest -n 2 --dist loadfile; fi
	$(PY) -m pytest -n 2 -m wheel tests/test_packaging.py

test: lint typecheck unit test-mixed

# the mixed-backend run: torch serves the tests' tensors while NumPy stays the default Ember's own code sees,
# so a tensor Ember makes mid-computation without its inputs' device fails (docs/architecture.md). `make test`
# runs it on the code that makes tensors of its own (training, data, layers, autograd, sparse, PNNX: where it has
# found bugs) to stay within its time budget; MIXED_TESTS=tests runs it on the whole suite.
MIXED_TESTS ?= tests/train tests/data tests/sparse tests/amp tests/autograd tests/optim tests/pnnx \
	tests/nn/test_transformer_stacks.py tests/nn/test_layers.py tests/test_default_device.py
test-mixed: $(STAMP)
	if $(PY) -c "import torch" 2>/dev/null; then EMBER_TEST_MIXED=1 $(PY) -m pytest -n 2 --dist loadfile $(MIXED_TESTS); fi

# The GPU's code paths checked without a GPU (tests/conftest.py): the torch suite with torch's CPU backend taking the
# accelerator's paths (no host checks or host-side branches, as on CUDA), then the suite with torch-CPU as the
# default device beside NumPy's CPU (a GPU machine's split between cuda and from_numpy's host). Two more whole-suite
# runs, so not part of `make test`; ACCEL_TESTS=tests/... narrows them.
ACCEL_TESTS ?= tests
test-accel: $(STAMP)
	if $(PY) -c "import torch" 2>/dev/null; then \
		EMBER_BACKEND=torch EMBER_TEST_ACCEL=1 $(PY) -m pytest -n 2 --dist loadfile $(ACCEL_TESTS) && \
		EMBER_TEST_FAKE_DEVICE=1 $(PY) -m pytest -n 2 --dist loadfile $(ACCEL_TESTS); \
	else echo "test-accel: torch is not installed, nothing to run"; fi

# On a GPU machine, with the Python environment already there (CUDA torch, CuPy; no network, nothing installed):
# the whole suite with the default device cuda once per CUDA backend, and Ember against PyTorch on the GPU.
# Without a GPU each says in one line why it skipped. PYTHON=... picks the interpreter; BENCH_GPU_ARGS=... passes
# gpu_bench.py's options (--budget SECONDS, --compile, workload names).
BENCH_GPU_ARGS ?=
test-cuda:
	$(PYTHON) tests/cuda/run_suite.py

bench-gpu:
	$(PYTHON) benchmarks/gpu_bench.py $(BENCH_GPU_ARGS)

# the documentation site from docs/ and the docstrings, into site/ (warnings are errors)
docs: $(STAMP)
	$(VENV)/bin/mkdocs build --strict

# Ember against PyTorch per benchmarks/README.md (whole processes, default threads, alternating pairs).
bench: $(STAMP)
	$(PY) benchmarks/compare.py

bench-micro: $(STAMP)
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) build site *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
