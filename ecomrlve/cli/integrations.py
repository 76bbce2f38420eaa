"""`ecomrlve env-server` and `ecomrlve loopback` (registered by `register(app)`)."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from ecomrlve.cli.common import console, fail, user_errors


def register(app: typer.Typer) -> None:
    """Add `env-server` and `loopback` to the `ecomrlve` app (over 80 lines only because it
    holds their typer functions)."""

    @app.command("env-server")
    def env_server(
        data: Path = typer.Option(Path("data"), "--data", help="data directory"),
        host: str = typer.Option("127.0.0.1", "--host", help="interface to bind"),
        port: int = typer.Option(8000, "--port", help="TCP port"),
        where: str | None = typer.Option(
            None, "--where", help="SQL predicate over the tasks view: the tasks served"
        ),
        config: Path | None = typer.Option(None, "--config", help="YAML config (its env block)"),
        token_file: Path | None = typer.Option(
            None, "--token-file", help="file holding the bearer token (else $ECOMRLVE_ENV_TOKEN)"
        ),
        max_sessions: int = typer.Option(128, "--max-sessions", help="sessions at once"),
        max_steps: int = typer.Option(32, "--max-steps", help="assistant turns per episode"),
        max_episode_s: float = typer.Option(
            600.0, "--max-episode-seconds", help="wall time per episode"
        ),
        idle_s: float = typer.Option(
            300.0, "--idle-seconds", help="evict a session idle this long"
        ),
        max_body_kb: int = typer.Option(
            256, "--max-body-kb", help="largest HTTP body / WebSocket message"
        ),
        shared_seats: int = typer.Option(
            0, "--shared-seats", help="host one shared world of K seats (0: an episode a session)"
        ),
        seat_token_file: Path | None = typer.Option(
            None, "--seat-token-file", help="the seats' tokens, one a line (with --shared-seats)"
        ),
        contention: float = typer.Option(
            1.0, "--contention", help="shared world: how likely a seat wants the scarce item"
        ),
    ) -> None:
        """Serve the env over HTTP/WebSocket (OpenEnv protocol): bearer token, step/time limits.

        One WebSocket session (/ws) per episode: reset (task_id or seed), step (one assistant
        turn), state. Client: `ecomrlve.integrations.env_server.EcomEnvClient`.
        \f
        Over 80 lines: its signature is the command's options (32 lines); the body reads the
        token and config and hands over to `integrations.env_server`.
        """
        try:
            from ecomrlve.integrations import env_server as server
        except ImportError as err:
            fail(f"the env server needs openenv-core: pip install 'ecomrlve[server]' ({err})")
        from ecomrlve.config import load_config

        if token_file is not None:
            with user_errors(OSError):
                token = token_file.read_text().strip()
        else:
            token = os.environ.get(server.TOKEN_ENV, "").strip()
        if not token:
            fail(f"no bearer token: set {server.TOKEN_ENV} or pass --token-file")
        seat_tokens: tuple[str, ...] = ()
        if seat_token_file is not None:
            with user_errors(OSError):
                lines = seat_token_file.read_text().splitlines()
            seat_tokens = tuple(line.strip() for line in lines if line.strip())
        if shared_seats < 0 or (shared_seats > 0) != bool(seat_tokens):
            fail("--shared-seats K needs --seat-token-file with K tokens (and K >= 1)")
        if not 0 < port < 65536:
            fail(f"--port must be 1-65535, got {port}")
        with user_errors():
            limits = server.ServerLimits(
                max_sessions=max_sessions,
                max_steps=max_steps,
                max_episode_s=max_episode_s,
                idle_s=idle_s,
                max_body_bytes=max_body_kb * 1024,
            )
            env_config = load_config(config).env if config is not None else None
            world = server.load_world(
                data, limits, where=where, env_config=env_config, shared_seats=shared_seats,
                contention=contention,
            )  # fmt: skip
            server.build_app(world, token, seat_tokens)  # refuses tokens that do not fit
        console.print(
            f"serving {len(world.tasks.ids):,} tasks on http://{host}:{port} "
            f"(WebSocket /ws; {limits.max_sessions} sessions, {limits.max_steps} turns and "
            f"{limits.max_episode_s:g} s per episode)",
            highlight=False,
        )
        if world.shared is not None:
            console.print(f"one shared world of {shared_seats} seats, a token each")
        server.serve(world, token, host, port, seat_tokens)

    @app.command("loopback")
    def loopback(
        model: Path = typer.Option(..., "--model", help="a model folder (Hugging Face layout)"),
        name: str | None = typer.Option(
            None, "--name", help="served model name (default: the folder's name)"
        ),
        port: int = typer.Option(0, "--port", help="TCP port on 127.0.0.1 (0: any free one)"),
        max_seconds: float = typer.Option(600.0, "--max-seconds", help="stop after this long"),
        raw_text: bool = typer.Option(False, "--raw-text", help="no tool-call parsing"),
        max_batch: int = typer.Option(32, "--max-batch", help="requests batched at most"),
    ) -> None:
        """Serve a local model folder over an OpenAI-compatible API on 127.0.0.1 (vLLM's response
        schema, Hugging Face generate; CPU or GPU), for `ecomrlve eval --endpoint` and tests
        without vLLM. Prints "serving NAME at URL" and stops by itself after --max-seconds."""
        if not model.is_dir():
            fail(f"--model {model}: not a folder")
        from ecomrlve.testing.loopback import run

        with user_errors(OSError):
            run(str(model), name, port, max_seconds, not raw_text, max_batch)
