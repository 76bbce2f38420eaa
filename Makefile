# Two entry points (see README): `make run` and `make test`. Both build the environment first.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DATA ?= data
# A CPU build of torch lies on local disk; an unpinned torch would pull a multi-GB CUDA build.
TORCH_SPEC ?= torch==2.13.0
# verl pins an older transformers than ours: installed without its dependencies (the `verl`
# extra lists the modules it imports), so tests run its RLHFDataset, schemas and config loader.
VERL_SPEC ?= verl>=0.8,<0.10

.PHONY: env run test lint layers bench clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q "$(TORCH_SPEC)"
	$(BIN)/python -m pip install -q -e ".[train,dev,verl,trl,server,tensorboard,wandb]" "$(TORCH_SPEC)"
	$(BIN)/python -m pip install -q --no-deps "$(VERL_SPEC)"
	touch $@

env: $(BIN)/.installed

run: env
	$(BIN)/ecomrlve pipeline --data $(DATA)
	$(BIN)/ecomrlve sql "SELECT scenario, min_steps, count(*) AS tasks FROM tasks GROUP BY ALL ORDER BY ALL" --data $(DATA)

# lint, then the layer contracts of pyproject.toml ([tool.importlinter]), then the tests (among
# them tests/test_docs_site.py: `mkdocs build --strict` of the docs site)
test: env
	$(BIN)/ruff check ecomrlve tests benchmarks
	$(BIN)/lint-imports
	$(BIN)/python -m pytest tests

lint: env
	$(BIN)/ruff check ecomrlve tests benchmarks
	$(BIN)/ruff format --check ecomrlve tests benchmarks

# the layer contracts alone (`make test` runs them too)
layers: env
	$(BIN)/lint-imports

clean:
	rm -rf $(VENV) $(DATA)
