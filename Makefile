# Two commands do all the set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
PIP     = $(PY) -m pip
export HF_HUB_OFFLINE = 1
export TOKENIZERS_PARALLELISM = false

.PHONY: demo test install bench clean

$(VENV)/.installed: pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q -c constraints.txt "torch==2.13.0"
	$(PIP) install -q -c constraints.txt -e ".[test]"
	touch $@

install: $(VENV)/.installed

demo: install
	$(PY) -m pyterrier_instruct.reproduce.cli demo --out results/demo

test: install
	$(PY) -m pytest -q

bench: install
	$(PY) benchmarks/bench_pmrr.py
	$(PY) benchmarks/bench_dense.py
	$(PY) benchmarks/bench_listwise.py

clean:
	rm -rf $(VENV) results
