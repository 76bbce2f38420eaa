"""The scenario generators: difficulty-controlled tasks with verified reference solutions.

Public API:
* `generate_tasks(data_or_ctx, n, seed, ...)` -> (polars frame of task rows, report);
* `generate_chunk(data_dir, seed, scenario, difficulty, start_index, count, min_steps,
  max_steps)` -> the same for one scenario x difficulty index range (what flows fan out);
* `write_tasks(data_dir, df, run_name)` -> Parquet files under `tasks/`, views refreshed;
* `generate_to_store(data_dir, n, seed, run_name, ...)` -> both in bounded memory (chunks
  spilled to disk, published together): what `ecomrlve generate` runs;
* `regenerate(task_id, data_or_ctx)` -> the same `Task` again, from its id alone;
* `axes_for(d)`, `REGISTRY`, `get_scenario(name)`, `GenContext`.
"""

from ecomrlve.generators.base import GenerationError, Plan, Scenario, ScenarioConfig, TaskKey
from ecomrlve.generators.context import GenContext
from ecomrlve.generators.difficulty import MAX_DIFFICULTY, axes_for, parse_difficulty_range
from ecomrlve.generators.generate import (
    GenerationReport,
    RunOptions,
    feasible_cells,
    generate_chunk,
    generate_task,
    generate_tasks,
    generate_to_store,
    regenerate,
    run_name_for,
    validate,
    write_tasks,
)
from ecomrlve.generators.registry import REGISTRY, get_scenario, parse_scenarios

__all__ = [
    "MAX_DIFFICULTY",
    "REGISTRY",
    "GenContext",
    "GenerationError",
    "GenerationReport",
    "Plan",
    "RunOptions",
    "Scenario",
    "ScenarioConfig",
    "TaskKey",
    "axes_for",
    "feasible_cells",
    "generate_chunk",
    "generate_task",
    "generate_tasks",
    "generate_to_store",
    "get_scenario",
    "parse_difficulty_range",
    "parse_scenarios",
    "regenerate",
    "run_name_for",
    "validate",
    "write_tasks",
]
