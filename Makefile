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

# bytecode of every module, as a regular install writes it, again after each edit: the
# command starts ~30 ms sooner where Python may not write it itself (PYTHONDONTWRITEBYTECODE)
$(VENV)/.compiled: $(shell find regcb_stream -name '*.py') | $(VENV)/.installed
	$(BIN)/python -m compileall -q regcb_stream
	touch $@

demo: $(VENV)/.installed $(VENV)/.compiled
	$(BIN)/python -m regcb_stream.demo

test: $(VENV)/.installed-test $(VENV)/.compiled
	$(BIN)/python -m pytest

# every benchmark behind the numbers in README.md and docs/ (several hours on 2 cores)
bench: $(VENV)/.installed-test
	$(BIN)/python -m pip install -q -e '.[bench]'
	$(BIN)/python -m bench
	$(BIN)/python -m bench --families regcb-elim:river_bayes regcb-opt:river_bayes \
		regcb-elim:ridge-summed regcb-opt:ridge-summed regcb-elim:gb5-summed regcb-opt:gb5-summed
	$(BIN)/python benchmarks/gb5_speed.py --baseline 1d76a9b
	$(BIN)/python benchmarks/gb5_speed.py --workload issue --baseline c4f73be --pairs 3 \
		--output docs/gb5_speed_issue.md
	$(BIN)/python benchmarks/gb5_width.py
	$(BIN)/python benchmarks/progressive_reward.py
	$(BIN)/python benchmarks/oracles.py --update
	$(BIN)/python benchmarks/ridge_prior.py
	$(BIN)/python benchmarks/throughput.py
	$(BIN)/python benchmarks/command_speed.py
	$(BIN)/python benchmarks/soak.py
	$(BIN)/python benchmarks/oracle_trees.py
	$(BIN)/python benchmarks/defaults.py
	$(BIN)/python benchmarks/random_features.py  # after defaults.py: it reads its runs
	$(BIN)/python benchmarks/feature_ridge.py  # after defaults.py: it reads its runs
	$(BIN)/python benchmarks/model_selection.py  # after defaults.py: it reads its runs
	$(BIN)/python benchmarks/joint_budget.py  # after defaults.py: it reads its runs
	$(BIN)/python benchmarks/joint_defaults.py
	$(BIN)/python benchmarks/long_horizon.py
	$(BIN)/python benchmarks/unseen_streams.py  # after random_features.py: it reads its runs
	$(BIN)/python benchmarks/forgetting.py
	$(BIN)/python benchmarks/change_detection.py
	$(BIN)/python benchmarks/auto_budget_cost.py
	$(BIN)/python benchmarks/blas_threads.py
	$(BIN)/python benchmarks/high_dim.py
	$(BIN)/python benchmarks/bounded_quality.py
	$(BIN)/python benchmarks/oracle_threshold.py
	$(BIN)/python benchmarks/reliability.py
	$(BIN)/python benchmarks/delayed_rewards.py
	$(BIN)/python benchmarks/dsjson_speed.py
	$(BIN)/python benchmarks/explore_eval_coverage.py --multiplier min
	$(BIN)/python benchmarks/compare_speed.py
	$(BIN)/python benchmarks/dask_sweep.py
	$(BIN)/python benchmarks/replica_refresh.py
	$(BIN)/python benchmarks/parallel_replay.py
	$(BIN)/python benchmarks/command_cluster.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
