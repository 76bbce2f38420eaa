"""The `ecomrlve` typer app: global options, and every part's commands registered on it by its
module's `register(app)`."""

from __future__ import annotations

import logging

import typer

from ecomrlve import __version__
from ecomrlve.cli import data as data_cli
from ecomrlve.cli import env as env_cli
from ecomrlve.cli import flows as flows_cli
from ecomrlve.cli import generators as generators_cli
from ecomrlve.cli import integrations as integrations_cli
from ecomrlve.cli import train as train_cli
from ecomrlve.cli.common import console

app = typer.Typer(
    name="ecomrlve",
    help="Synthetic e-commerce worlds turned into verifiable RL training for tool-using agents.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _print_version(value: bool) -> None:
    if value:
        console.print(f"ecomrlve {__version__}", highlight=False)
        raise typer.Exit()


@app.callback()
def _main(
    verbose: bool = typer.Option(
        False, "--verbose/--quiet", "-v", help="debug logging", metavar=""
    ),
    version: bool = typer.Option(
        False,
        "--version",
        callback=_print_version,
        is_eager=True,
        help="print the version and exit",
    ),
) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )


data_cli.register(app)
env_cli.register(app)
flows_cli.register(app)
generators_cli.register(app)
integrations_cli.register(app)
train_cli.register(app)


def main() -> None:  # pragma: no cover - entry point
    app()
