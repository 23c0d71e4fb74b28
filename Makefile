# Two commands do all the set-up: `make lab` and `make test` (see README.md).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.uneven-installed
LAB_PORT ?= 8888
LAB_ARGS ?=
# The folder the server shows (the tests point it at a scratch copy).
LAB_ROOT ?= $(CURDIR)
# Jupyter refuses to run as root unless told; CI and containers run as root.
ROOT_ARG := $(if $(filter 0,$(shell id -u)),--allow-root,)

# The edition `make lab` opens: en (the default) or zh_TW, the Traditional Chinese one
# (`make lab EDITION=zh_TW`; its notebooks are generated first, into notebooks/zh_TW/).
# LANG is the system's locale variable, so EDITION is the name to use; `make lab LANG=zh_TW`
# is accepted too: a LANG given on make's command line that names an edition is taken as
# EDITION and not passed on to the programs make runs (they keep the locale LC_ALL/LC_CTYPE give
# them, or Python's UTF-8 default), never a locale "zh_TW" that the system may not have.
EDITIONS := en zh_TW
ifeq ($(origin LANG),command line)
ifneq ($(filter $(subst -,_,$(LANG)),$(EDITIONS)),)
EDITION := $(subst -,_,$(LANG))
unexport LANG
endif
endif
EDITION ?= en
ifeq ($(filter $(EDITION),$(EDITIONS)),)
$(error EDITION must be one of: $(EDITIONS) (got "$(EDITION)"))
endif
LAB_START := notebooks/$(if $(filter en,$(EDITION)),,$(EDITION)/)00_start_here.ipynb

.PHONY: install lab test figures bench lint clean stamp assignments site

# The venv's own kernel must win over a user-level "python3" kernelspec (ipython kernel install).
export JUPYTER_PATH := $(abspath $(VENV))/share/jupyter

# Installs the test, browser, classroom (otter-grader), site (Sphinx, MyST-NB) and research (Dask,
# pandas, SimPy) extras, then
# nbstripout as a git filter (`nbstripout --install`, local git config; nothing outside a git work
# tree), so that running a notebook never dirties `git status`; the filter's options live in
# tools/nbstrip.py.
$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 10))' || \
		{ echo "uneven needs Python >= 3.10; try: make PYTHON=python3.11 $(MAKECMDGOALS)"; exit 1; }
	$(BIN)/python -c 'import pip' 2>/dev/null || { rm -rf $(VENV); $(PYTHON) -m venv $(VENV); }
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,browser,classroom,site,research]'
	$(BIN)/python tools/nbstrip.py install
	touch $(STAMP)

# JupyterLab's settings overrides (tools/lab_overrides.json: no "Would you like to get notified
# about official Jupyter news?" pop-up, no update check) go where the venv's JupyterLab reads them;
# binder/postBuild puts the same file where Binder's does.
LAB_OVERRIDES := $(VENV)/share/jupyter/lab/settings/overrides.json
$(LAB_OVERRIDES): tools/lab_overrides.json $(STAMP)
	mkdir -p $(dir $@)
	cp tools/lab_overrides.json $@

install: $(STAMP) $(LAB_OVERRIDES)

# Localhost only; Jupyter's token auth stays on (never pass an empty token here). The URL it prints
# (and opens) lands on the start page of the EDITION (see above).
lab: install
	$(if $(filter en,$(EDITION)),,$(BIN)/python tools/editions i18n build --lang $(EDITION))
	$(BIN)/jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.port=$(LAB_PORT) \
		--ServerApp.root_dir=$(LAB_ROOT) --LabApp.default_url=/lab/tree/$(LAB_START) \
		--config=tools/lab_config.py \
		$(ROOT_ARG) $(LAB_ARGS)

# The suite is CPU-bound: one pytest-xdist worker per core (TEST_WORKERS=0 runs in one process).
# Tests that share one expensive fixture (the browser, the site build) stay on one worker.
TEST_WORKERS ?= 2
test: install
	$(BIN)/ruff check .
	$(BIN)/python -m pytest $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadgroup)

# Both editions: the English notebooks write figures/, the zh-TW ones (generated first into
# notebooks/zh_TW/) figures/zh_TW/ (git-ignored, like notebooks/zh_TW/: both are built, not kept).
figures: install
	$(BIN)/python tools/run_notebooks.py notebooks/*.ipynb
	$(BIN)/python tools/editions i18n build
	$(BIN)/python tools/run_notebooks.py notebooks/zh_TW/*.ipynb

bench: install
	$(BIN)/python benchmarks/run.py

lint: install
	$(BIN)/ruff check .

# Binder/Colab badges and the Colab install cell in every notebook, from lib/uneven/online.py.
stamp: install
	$(BIN)/python tools/editions stamp

# The classroom edition under dist/assignments/: student notebooks, autograder bundles, solutions.
assignments: install
	$(BIN)/python tools/editions assignments

# The self-study site in both languages: English under _build/html/, zh-TW under
# _build/html/zh_TW/ (notebooks executed into _build/executed/, a cache).
site: install
	$(BIN)/python tools/editions site

# The long fuzz run: every bad value to every parameter of every public callable, and many more
# random combinations (`make test` runs a short share of it). The outcome table ends the output.
.PHONY: fuzz
FUZZ_EXAMPLES ?= 200
fuzz: install
	UNEVEN_FUZZ_FULL=1 UNEVEN_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/python -m pytest -m fuzz \
		-p no:cacheprovider tests/test_fuzz.py

# Also drops the notebook filter from the local git config: it runs the venv's python, and a
# required filter that cannot run would make git fail on notebooks.
clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .ruff_cache browser-screenshots dist _build
	git config --local --remove-section filter.nbstripout 2>/dev/null || true
	git config --local --remove-section diff.ipynb 2>/dev/null || true
