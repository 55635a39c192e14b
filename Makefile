# Two commands set up the environment and do everything: `make demo` runs the main job on the
# embedded default, `make test` checks the project.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: test demo lint bench clean

# Two test processes (pytest-xdist), each taking whole files: a module's fixtures (a reference
# run, a Ray cluster of its own) are made once, in one process.
test: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/pytest -n 2 --dist loadfile

# The whole pipeline on the embedded default (synthetic data, simulator, local Ray); a rerun
# resumes. Everything it makes is under groundbench-demo/.
demo: $(VENV)/.installed
	$(BIN)/groundbench demo

lint: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench: $(VENV)/.installed
	$(BIN)/python -m benchmarks.suite

# The stamp is rebuilt whenever pyproject.toml changes, so a new dependency is installed
# by the next `make test` without deleting the environment by hand.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis groundbench-demo
