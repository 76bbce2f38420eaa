"""Flow parameters (one pydantic model per flow) and the generation chunk plan. No prefect here.

The CLI builds and validates these before Prefect starts, so a bad config exits 2 having
written nothing; Prefect validates them again when a deployment run arrives from the UI.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from ecomrlve.config import (
    EVENTS_FROM,
    NO_EVENTS,
    EcomConfig,
    nest_training_keys,
)
from ecomrlve.generators.registry import check_scenarios, scenario_names
from ecomrlve.store import validate_identifier

TaskRunnerKind = Literal["threads", "processes", "dask"]


def _absolute(value: str) -> str:
    return str(Path(value).expanduser().resolve())


# a data directory, made absolute: deployments run in another working directory, so the path
# is pinned when the parameters are built
DataDir = Annotated[str, AfterValidator(_absolute)]


class FlowParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


P = TypeVar("P", bound=FlowParams)


class PipelineParams(FlowParams):
    """Everything the `pipeline` flow needs: the data directory and the whole config."""

    data_dir: DataDir = Field(description="data directory (DuckDB file, tasks, shards, plots)")
    config: EcomConfig = Field(default_factory=EcomConfig)
    config_source: str = Field("embedded defaults", description="where `config` came from")
    skip_train: bool = False
    train_output: str | None = Field(None, description="default DATA_DIR/runs/CURRICULUM")

    @model_validator(mode="after")
    def _check(self) -> PipelineParams:
        check_scenarios(self.config.env.scenarios)
        return self

    @property
    def scenarios(self) -> list[str]:
        """The config's scenarios; none named: every registered one."""
        return list(self.config.env.scenarios) or list(scenario_names())

    def training_output(self) -> Path:
        if self.train_output:
            return Path(self.train_output).expanduser().resolve()
        return Path(self.data_dir) / "runs" / self.config.data.curriculum


class RegenerateParams(FlowParams):
    """The `regenerate_curriculum` flow: N fresh, valid tasks in a step band, then shards."""

    data_dir: DataDir
    name: str = Field(description="curriculum name (an identifier)")
    min_steps: int = Field(ge=1)
    max_steps: int = Field(ge=1)
    tasks: int = Field(ge=1, description="valid new tasks wanted")
    scenarios: list[str] | None = Field(None, description="default: every scenario")
    difficulty: tuple[int, int] = (0, 10)
    from_run: str | None = Field(None, description="target weak spots of this training run")
    seed: int = Field(0, ge=0, description="mixed into the fresh seeds")
    events_from: int | None = Field(
        EVENTS_FROM,
        ge=0,
        le=NO_EVENTS,
        strict=True,
        description=f"first difficulty with world events; null or {NO_EVENTS}: none",
    )
    shard_size: int = Field(256, ge=1)
    chunk_size: int = Field(2000, ge=1, description="tasks per generation chunk")
    max_rounds: int = Field(6, ge=1, description="generation rounds before giving up")
    task_runner: TaskRunnerKind = "threads"
    workers: int = Field(2, ge=1)
    dask_address: str | None = None

    @property
    def events_threshold(self) -> int:
        """`events_from` as the generators take it: null (events off) is `NO_EVENTS`."""
        return NO_EVENTS if self.events_from is None else self.events_from

    @model_validator(mode="after")
    def _check(self) -> RegenerateParams:
        validate_identifier(self.name, "curriculum name")
        if self.min_steps > self.max_steps:
            raise ValueError(f"--min-steps {self.min_steps} > --max-steps {self.max_steps}")
        lo, hi = self.difficulty
        if not 0 <= lo <= hi:
            raise ValueError(f"difficulty must be a range lo-hi with 0 <= lo <= hi, got {lo, hi}")
        check_scenarios(self.scenarios or [])
        if self.scenarios is not None and not self.scenarios:
            raise ValueError("--scenarios is empty")
        if self.dask_address and self.task_runner != "dask":
            raise ValueError("--dask-address needs --task-runner dask")
        return self


class CurriculumParams(FlowParams):
    """The `curriculum` flow: shards from a SQL selection of the store's tasks."""

    data_dir: DataDir
    name: str
    where: str | None = Field(None, description="SQL predicate over the tasks view (trusted)")
    order: str | None = Field(None, description="SQL ORDER BY; default easy → hard interleaved")
    shard_size: int = Field(256, ge=1)
    interleave: bool = Field(True, description="mix scenarios within each difficulty")

    @model_validator(mode="after")
    def _check(self) -> CurriculumParams:
        validate_identifier(self.name, "curriculum name")
        return self


def with_overrides(params: P, overrides: dict[str, Any] | None) -> P:
    """`params` with `overrides` merged in, nested dicts key by key, validated again.

    Prefect replaces a deployment parameter as a whole, so `--params '{"params": {...}}'` must
    name every required field; the flows take a second parameter, `overrides`, merged here:
    `{"overrides": {"config": {"data": {"tasks": 500}}}}` changes one field and keeps the rest.
    """
    if not overrides:
        return params
    config = overrides.get("config")
    if isinstance(config, dict) and isinstance(config.get("training"), dict):
        # flat training keys into their blocks first: the dump they merge into is in block form
        config = {**config, "training": nest_training_keys(config["training"])}
        overrides = {**overrides, "config": config}
    merged = _deep_merge(params.model_dump(mode="json"), overrides)
    return type(params).model_validate(merged)


def _deep_merge(base: dict[str, Any], change: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in change.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out
