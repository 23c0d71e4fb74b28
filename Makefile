# Two commands do all the set-up: `make lab` and `make test` (see README.md).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.uneven-installed
LAB_PORT ?= 8888
LAB_ARGS ?=
# Jupyter refuses to run as root unless told; CI and containers run as root.
ROOT_ARG := $(if $(filter 0,$(shell id -u)),--allow-root,)

.PHONY: install lab test figures bench lint clean

# The venv's own kernel must win over a user-level "python3" kernelspec (ipython kernel install).
export JUPYTER_PATH := $(abspath $(VENV))/share/jupyter

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 10))' || \
		{ echo "uneven needs Python >= 3.10; try: make PYTHON=python3.11 $(MAKECMDGOALS)"; exit 1; }
	$(BIN)/python -c 'import pip' 2>/dev/null || { rm -rf $(VENV); $(PYTHON) -m venv $(VENV); }
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# Localhost only; Jupyter's token auth stays on (never pass an empty token here).
lab: install
	$(BIN)/jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.port=$(LAB_PORT) \
		--ServerApp.root_dir=$(CURDIR) $(ROOT_ARG) $(LAB_ARGS) notebooks/00_start_here.ipynb

test: install
	$(BIN)/ruff check .
	$(BIN)/python -m pytest

figures: install
	$(BIN)/python tools/run_notebooks.py notebooks/*.ipynb

bench: install
	$(BIN)/python benchmarks/run.py

lint: install
	$(BIN)/ruff check .

# The long fuzz run: every bad value to every parameter of every public callable, and many more
# random combinations (`make test` runs a short share of it). The outcome table ends the output.
.PHONY: fuzz
FUZZ_EXAMPLES ?= 200
fuzz: install
	UNEVEN_FUZZ_FULL=1 UNEVEN_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/python -m pytest -m fuzz \
		-p no:cacheprovider tests/test_fuzz.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .ruff_cache
