# Quick start: `make demo` and `make test`; both create .venv and install what they need.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
# a path entry instead of an import hook: the command starts ~10 ms sooner
EDITABLE := --config-settings editable_mode=compat
# the compiled kernels' sources: an edit rebuilds them
KERNELS := $(wildcard regcb_stream/*.h regcb_stream/*/*.c regcb_stream/*/*.h)

.PHONY: demo test bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed: pyproject.toml setup.py $(KERNELS) | $(BIN)/python
	$(BIN)/python -m pip install -q -e . $(EDITABLE)
	touch $@

$(VENV)/.installed-test: pyproject.toml setup.py $(KERNELS) | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[test]' $(EDITABLE)
	touch $@ $(VENV)/.installed

# bytecode of every module, as a regular install writes it, again after each edit, and of
# the installed packages once: where Python may not write it itself (PYTHONDONTWRITEBYTECODE)
# the command starts ~30 ms sooner, and numpy's import ~0.15 s sooner
$(VENV)/.compiled: $(shell find regcb_stream -name '*.py') | $(VENV)/.compiled-packages
	$(BIN)/python -m compileall -q regcb_stream
	touch $@

$(VENV)/.compiled-packages: $(VENV)/.installed
	$(BIN)/python -m compileall -q -j 0 $(VENV)/lib
	touch $@

# the example logs of the README and the guides (made, not shipped)
examples/data/cb.dat: regcb_stream/datasets/examples.py | $(VENV)/.installed
	$(BIN)/python -m regcb_stream.datasets.examples examples/data

demo: $(VENV)/.installed $(VENV)/.compiled examples/data/cb.dat
	$(BIN)/python -m regcb_stream.demo
	@echo "The commands are in $(BIN): . $(BIN)/activate, then e.g."
	@echo "  regcb-stream --cb_explore 4 -d examples/data/cb.dat -p predictions.txt"

test: $(VENV)/.installed-test $(VENV)/.compiled
	$(BIN)/python -m pytest

# every benchmark behind the numbers in README.md and docs/results/ (several hours on 2 cores),
# in the order of bench/registry.py (each after those it reads; --list shows them)
bench: $(VENV)/.installed-test
	$(BIN)/python -m pip install -q -e '.[bench]'
	$(BIN)/python -m bench.registry

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
