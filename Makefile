# distcalc: `make run` and `make test` are the whole set-up (see README).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP_RUN  := $(VENV)/.installed-run
STAMP_TEST := $(VENV)/.installed-test

.PHONY: run test test-fast install install-dev clean bench

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=23,<27"

$(STAMP_RUN): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e ".[plot,web]"
	touch $@

$(STAMP_TEST): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e ".[dev,plot,bench,web]"
	touch $@ $(STAMP_RUN)

install: $(STAMP_RUN)
install-dev: $(STAMP_TEST)

## run: create .venv, install, run the main job on the built-in example
run: $(STAMP_RUN)
	$(BIN)/distcalc analyze
	@echo "The calculator as a web page: $(BIN)/distcalc serve   (then open http://127.0.0.1:8000/)"

## test: install the dev extras and run the whole suite, the slow multi-process torch runs included (what CI runs)
test: $(STAMP_TEST)
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup

## test-fast: the suite without the multi-process torch runs marked slow (for quick local iterations)
test-fast: $(STAMP_TEST)
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup -m "not slow"

bench: $(STAMP_TEST)
	$(BIN)/python benchmarks/simulate_scale.py
	$(BIN)/python benchmarks/search.py

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache .hypothesis
