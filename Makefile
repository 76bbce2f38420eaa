# Two entry points (see README): `make run` and `make test`. Both build the environment first.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DATA ?= data
# A CPU build of torch lies on local disk; an unpinned torch would pull a multi-GB CUDA build.
TORCH_SPEC ?= torch==2.13.0

.PHONY: env run test lint bench clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q "$(TORCH_SPEC)"
	$(BIN)/python -m pip install -q -e ".[train,dev]"
	touch $@

env: $(BIN)/.installed

run: env
	$(BIN)/ecomrlve pipeline --data $(DATA)
	$(BIN)/ecomrlve sql "SELECT scenario, min_steps, count(*) AS tasks FROM tasks GROUP BY ALL ORDER BY ALL" --data $(DATA)

test: env
	$(BIN)/ruff check ecomrlve tests benchmarks
	$(BIN)/python -m pytest tests

lint: env
	$(BIN)/ruff check ecomrlve tests benchmarks
	$(BIN)/ruff format --check ecomrlve tests benchmarks

clean:
	rm -rf $(VENV) $(DATA)
