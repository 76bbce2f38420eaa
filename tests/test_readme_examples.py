"""README examples run as written (issue 31: docs that cannot rot).

Each test takes a README section's code blocks verbatim and runs them against a small store
built by the real CLI with the seeds the README uses. The only edit is the server's address
(`127.0.0.1:8000` becomes the test server's free port)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ecomrlve.cli import app

README = Path(__file__).resolve().parents[1] / "README.md"
TOKEN = "readme-token"


def section_blocks(start: str, end: str, language: str = "python") -> list[str]:
    """The ```language blocks of the README between the lines containing `start` and `end`."""
    text = README.read_text(encoding="utf-8")
    begin = text.index(start)
    part = text[begin : text.index(end, begin)]
    return re.findall(rf"```{language}\n(.*?)```", part, flags=re.S)


def _ok(args: list[str]) -> str:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def seed0_store(tmp_path_factory) -> Path:
    """A small catalog and the first difficulty-3 cart tasks of `generate --seed 0`."""
    data = tmp_path_factory.mktemp("readme-store")
    _ok(["catalog", "--products", "2000", "--seed", "0", "--data", str(data)])
    _ok(["generate", "--tasks", "2", "--seed", "0", "--scenarios", "cart", "--difficulty", "3",
         "--data", str(data)])  # fmt: skip
    return data


def test_openenv_examples_run_as_written(seed0_store, monkeypatch) -> None:
    from ecomrlve.integrations.env_server import ServerLimits, load_world, serve_in_thread

    blocks = section_blocks("**OpenEnv server**", "python benchmarks/env_server.py")
    assert len(blocks) == 2  # EcomEnvClient, GenericEnvClient
    ids = set(re.findall(r'task_id="([^"]+)"', "".join(blocks)))
    listed = _ok(
        ["sql", "SELECT task_id FROM tasks", "--format", "csv", "--data", str(seed0_store)]
    )
    assert ids and all(i in listed.split() for i in ids)  # the README's ids are real ones
    monkeypatch.setenv("ECOMRLVE_ENV_TOKEN", TOKEN)
    with serve_in_thread(load_world(seed0_store, ServerLimits()), TOKEN) as url:
        for number, block in enumerate(blocks, start=1):
            code = block.replace("http://127.0.0.1:8000", url)
            code = code.replace("@127.0.0.1:8000", "@" + url.removeprefix("http://"))
            scope: dict = {}
            exec(compile(code, f"README.md, OpenEnv block {number}", "exec"), scope)
            assert scope["opening"]  # the block reached its reset and step
            assert scope["result"].done or scope["result"].observation
