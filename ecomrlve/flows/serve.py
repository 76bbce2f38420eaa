"""Deployments: the pipeline on a cron schedule and the curriculum regeneration on demand.

`ecomrlve serve` registers both with the Prefect API (a `prefect server start` when
PREFECT_API_URL points at one, else the temporary local server) and serves them from this
process: the runner polls for scheduled or triggered runs and executes each in a subprocess.
Trigger one from the UI or with::

    prefect deployment run 'ecomrlve-pipeline/pipeline'
    prefect deployment run 'ecomrlve-regenerate-curriculum/regenerate-hard'

The parameters are the flows' pydantic models, fixed when serving. Change a few fields of a run
with `overrides` (merged key by key into `params`)::

    prefect deployment run 'ecomrlve-pipeline/pipeline' \
        --params '{"overrides": {"skip_train": true}}'

(`--params '{"params": {...}}'` replaces the whole model, so it must name every field.)
"""

from __future__ import annotations

from typing import Any

from prefect.deployments.runner import EntrypointType, RunnerDeployment

from ecomrlve.flows.params import PipelineParams, RegenerateParams
from ecomrlve.flows.pipeline import pipeline, regenerate_curriculum

PIPELINE_DEPLOYMENT = "pipeline"
TAGS = ["ecomrlve"]


def regenerate_deployment_name(params: RegenerateParams) -> str:
    return f"regenerate-{params.name}"


def build_deployments(
    pipeline_params: PipelineParams,
    regenerate_params: RegenerateParams,
    *,
    regenerate_cron: str | None = None,
) -> list[RunnerDeployment]:
    """The two deployments, with their parameters and schedules (`data.schedule` for the
    pipeline; the regeneration runs on demand unless `regenerate_cron` is given)."""
    pipeline_deployment = pipeline.to_deployment(
        name=PIPELINE_DEPLOYMENT,
        cron=pipeline_params.config.data.schedule,
        parameters={"params": pipeline_params.model_dump(mode="json")},
        description=(
            f"catalog → tasks → shards → training on {pipeline_params.data_dir} "
            f"(cron {pipeline_params.config.data.schedule})"
        ),
        tags=TAGS,
        entrypoint_type=EntrypointType.MODULE_PATH,
    )
    regenerate = regenerate_curriculum.to_deployment(
        name=regenerate_deployment_name(regenerate_params),
        cron=regenerate_cron,
        parameters={"params": regenerate_params.model_dump(mode="json")},
        description=(
            f"{regenerate_params.tasks} fresh tasks with {regenerate_params.min_steps}-"
            f"{regenerate_params.max_steps} steps → curricula/{regenerate_params.name} "
            f"({'cron ' + regenerate_cron if regenerate_cron else 'on demand'})"
        ),
        tags=TAGS,
        entrypoint_type=EntrypointType.MODULE_PATH,
    )
    return [pipeline_deployment, regenerate]


def serve_deployments(deployments: list[RunnerDeployment], **kwargs: Any) -> None:
    """Register and serve until interrupted (Ctrl-C pauses the schedules on the way out)."""
    from prefect import serve

    serve(*deployments, **kwargs)
