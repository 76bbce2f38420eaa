"""The `ecomrlve` command line, on top of every layer: `main` holds the typer app, each other
module one part's commands (`data`: catalog and SQL; `generators`: tasks; `env`: play and
verify; `train`: train, evaluate, view; `flows`: the Prefect pipeline, curricula, schedules;
`integrations`: the env server and exporters), registered on the app by its `register(app)`.
`common` is what they share: consoles, one-line errors, progress bars, tables."""

from ecomrlve.cli.main import app, main

__all__ = ["app", "main"]
