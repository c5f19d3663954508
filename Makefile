# Two commands do all the set-up on a fresh machine: `make demo` and `make test` (`make docs`: the API reference).
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
PIP     = $(PY) -m pip
export HF_HUB_OFFLINE = 1
export TOKENIZERS_PARALLELISM = false

.PHONY: demo test docs install bench clean

# Each target installs what it needs, no more: `make demo` the [demo] extra (a 2.0 GB venv; the [test] one is 4.3 GB),
# `make docs` the [docs] extra, `make test` the [test] extra and the reference code the parity tests run.
# torch goes in first on its own, so the CPU build constraints.txt pins is the one the extras find installed.
$(PY):
	$(PYTHON) -m venv $(VENV)

$(VENV)/.demo: pyproject.toml constraints.txt | $(PY)
	$(PIP) install -q -c constraints.txt "torch==2.13.0"
	$(PIP) install -q -c constraints.txt -e ".[demo]"
	touch $@

$(VENV)/.docs: pyproject.toml constraints.txt | $(PY)
	$(PIP) install -q -c constraints.txt -e ".[docs]"
	touch $@

$(VENV)/.installed: pyproject.toml constraints.txt tests/vllm_0.33.txt | $(PY)
	$(PIP) install -q -c constraints.txt "torch==2.13.0"
	$(PIP) install -q -c constraints.txt -e ".[test]"
	# rank_llm 0.26.0 for the prompt-parity tests only (pure Python; declares Python >= 3.12, runs on 3.11), kept out of site-packages
	$(PIP) install -q --upgrade --no-deps --ignore-requires-python --target $(VENV)/rank_llm_0.26 "rank-llm==0.26.0" "dacite==1.9.2"
	# llm-rankers 0.0.2 for the Setwise/Rank-R1 parity tests only (pure Python; openai and tiktoken, which it imports, come with the test extra's deps), kept out of site-packages
	$(PIP) install -q --upgrade --no-deps --target $(VENV)/llm_rankers_0.0.2 "llm-rankers==0.0.2"
	# freshstack 0.0.6 + pyndeval 0.0.8 for the FreshStack scoring-parity test only (pytrec_eval comes with ir_measures)
	$(PIP) install -q --upgrade --no-deps --target $(VENV)/freshstack_0.0.6 "freshstack==0.0.6" "pyndeval==0.0.8"
	# vLLM 0.33.0's own Python (no CUDA kernels) for the vLLM tests (tests/fake_vllm.py), kept out of site-packages: the
	# wheel and the requirements the venv lacks, pinned, --no-deps (the venv's transformers/torch stay; see the file)
	$(PIP) install -q --upgrade --no-deps --target $(VENV)/vllm_0.33 -r tests/vllm_0.33.txt
	touch $@

install: $(VENV)/.installed

demo: $(VENV)/.demo
	$(PY) -m pyterrier_instruct.reproduce.cli demo --out results/demo

docs: $(VENV)/.docs  # the API reference PyTerrier's site includes, with pt_docs/conf.py, warnings as errors
	$(PY) -m sphinx -W --keep-going -q -b html pyterrier_instruct/pt_docs build/pt_docs
	@echo "open build/pt_docs/index.html"

# the tests on every core (pytest-xdist): a module's tests on one worker, the Ray tests together, heaviest lanes first.
# Bytecode is cached (.gitignore'd __pycache__/) even where PYTHONDONTWRITEBYTECODE is set: each worker, child process
# and Ray actor then reads the compiled package and pytest's rewritten test modules instead of compiling them again.
JOBS ?= auto
test: install  # every lane (docs/testing.md)
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -n $(JOBS)

test-%: install  # one lane: make test-unit, test-models, test-tools, test-e2e, test-external
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -m $* -n $(JOBS)

bench: install
	$(PY) benchmarks/bench_pmrr.py
	$(PY) benchmarks/bench_dense.py
	$(PY) benchmarks/bench_listwise.py
	$(PY) benchmarks/bench_rank1.py
	$(PY) benchmarks/bench_ray.py
	$(PY) benchmarks/bench_models_2025.py
	$(PY) benchmarks/bench_doccache.py
	$(PY) benchmarks/bench_throughput.py

clean:
	rm -rf $(VENV) results
