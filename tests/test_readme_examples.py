"""README and docs examples run as written (issues 31 and 45: docs that cannot rot).

Every fenced block of README.md and of each page of the docs site (`docs/*.md`, in the order of
mkdocs.yml's `nav`, the README last) is accounted for: `test_every_readme_block_is_accounted_for`
reads them all and fails on a shell command or block that is neither in `RUN_BY` (the test or
fixture here that runs it, or a test elsewhere that runs it verbatim) nor in `NOT_RUN` (with the
reason the suite cannot run it), and on a docs page missing from that order. A test runs the
commands and blocks `RUN_BY` gives it, in a temporary folder holding `data/`, as a reader
following the docs would; an example written the same way in several places (the README's tour
repeats commands of the docs pages) runs once, where it first appears. The only substitutions
are these (`SUBSTITUTIONS` and `_sized`):

* sizes: `--products N` becomes 3,000 and `--tasks N` at most 99 (the docs' 1M products and
  9,000 tasks take minutes; the commands and flags are the same);
* placeholders: `TASK_ID` becomes a task id of the store;
* the OpenEnv server runs in a thread of the test at a free port (the command line is parsed,
  its token read from the environment and its world loaded as written; only the blocking
  `uvicorn.run` on port 8000 is replaced), and the client blocks' `127.0.0.1:8000` names it;
* `configs/tiny_cpu.yaml` in the training page becomes `TINY_RUN` (the demo's config trains
  for many minutes; `TINY_RUN` runs SFT + 2 DAPO steps of the same code).

YAML blocks are fragments of a config: each is merged into `configs/tiny_cpu.yaml` and loaded
through `ecomrlve.config`, and every value it sets must land where it says.
"""

from __future__ import annotations

import inspect
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from ecomrlve.cli import app

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def doc_files() -> list[Path]:
    """The docs pages in mkdocs.yml's navigation order, then the README (whose tour repeats
    commands the pages run first)."""
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]
    pages = [DOCS / page for entry in nav for page in entry.values()]
    return [*pages, README]


TOKEN = "readme-token"
TASK_ID = "cart-s0-d3-i0-a0"  # the docs' example id; `seed0_shop` checks it is real
SUBSTITUTIONS = {"TASK_ID": TASK_ID}
SIZES = {"--products": 3000, "--tasks": 99}  # at most this many
TRAINED_TASKS = 12  # in the Training section's store

# What runs each README / docs item: a shell command (its words, prefix match, longest wins) or a
# block's first line. Values name a test or fixture of this module, or `file::test` elsewhere.
RUN_BY: dict[str, str] = {
    # Catalog and Tasks sections: the store every later section reads
    "ecomrlve catalog --products": "seed0_shop",
    "ecomrlve sql SELECT category": "seed0_shop",
    "ecomrlve sql SELECT brand": "seed0_shop",
    "ecomrlve generate --tasks": "seed0_shop",
    "ecomrlve sql SELECT scenario, min_steps": "seed0_shop",
    "from ecomrlve.generators import": "seed0_shop",
    # Environment and verifier
    "ecomrlve solve": "test_environment_section",
    "ecomrlve verify": "test_environment_section",
    "ecomrlve play": "test_environment_section",
    "from ecomrlve.env import": "test_environment_section",
    # Pipeline, and the data layout it leaves
    "ecomrlve curriculum build --name easy": "curricula",
    "ecomrlve curriculum regenerate --name hard": "curricula",
    "data/catalog/products.parquet": "test_data_layout_listing_matches_the_store",
    # Training, Integrations, Configuration
    "ecomrlve train --config configs/ecom_rlve.yaml --dry-run": "test_dry_run_and_verl_print",
    "ecomrlve train --engine verl --config configs/ecom_rlve.yaml --gpus 8 --print-only": (
        "test_dry_run_and_verl_print"
    ),
    "ecomrlve train --config configs/tiny_cpu.yaml": "trained",
    "ecomrlve eval --model experiments/tiny/model": "test_training_section",
    "ecomrlve sql SELECT step, reward_mean": "test_training_section",
    "ecomrlve view experiments/tiny --data data": "test_training_section",
    "ecomrlve curriculum regenerate --name hard --min-steps 6 --max-steps 8 --tasks 2000 "
    "--from-run last": "test_regenerate_from_the_last_run",
    "from trl import GRPOConfig, GRPOTrainer": (
        "tests/test_integrations_trl.py::test_readme_trl_snippet_runs_as_written_and_calls_tools"
    ),
    "export ECOMRLVE_ENV_TOKEN": "test_openenv_section",
    "ecomrlve env-server": "test_openenv_section",
    "import os": "test_openenv_section",  # both client blocks
    "training:": "test_yaml_blocks_load_through_the_config_model",
}
# The README / docs items the suite does not run, and why.
NOT_RUN: dict[str, str] = {
    "make run": "the fresh-machine install plus the demo's training: what a user runs, not a test",
    "make test": "the fresh-machine install plus this suite: .ci/run runs it",
    "make lint": "ruff over the tree: part of `make test` (.ci/run)",
    "make layers": "the import-layer contracts: part of `make test` (.ci/run)",
    ".venv/bin/python -m pytest": "this suite itself",
    ".venv/bin/python benchmarks/": "a benchmark script (prints a table, minutes)",
    "python benchmarks/": "a benchmark script (prints a table, minutes)",
    "ecomrlve pipeline --data data": "the whole demo: its CPU training (tests/test_flows.py "
    "runs the same flow on small configs)",
    "ecomrlve pipeline --config configs/ecom_rlve.yaml": "the article's data block: a 1M-product "
    "catalog and 100k tasks",
    "ecomrlve pipeline --task-runner dask": "needs a running Dask scheduler",
    "python train.py": "needs Qwen3-8B's weights and GPUs",
    "torchrun --nproc_per_node 8": "needs 8 GPUs and Qwen3-8B",
    "ecomrlve train --engine verl --config configs/ecom_rlve.yaml --gpus 8": "runs verl: needs "
    "8 GPUs, vLLM and Qwen3-8B",
    "vllm serve": "needs a GPU, vLLM and Qwen3-8B",
    "ecomrlve eval --endpoint http://127.0.0.1:8000/v1": "needs the vLLM server above (tests/"
    "test_endpoint.py runs endpoint evaluations against the loopback server)",
    "export MY_API_KEY": "a hosted API's key",
    "ecomrlve eval --endpoint https://HOST/v1": "a hosted API",
    "from ecomrlve.integrations.pettingzoo import parallel_env": "`policy` stands for the "
    "reader's agent; tests/test_shared_world.py plays `parallel_env` to the end with scripted "
    "seats and runs PettingZoo's own `parallel_api_test` on it",
    "from ecomrlve.integrations.env_server import EcomAction, EcomEnvClient": "`seat_token` and "
    "`policy` stand for the reader's; tests/test_env_server_shared.py plays four clients on one "
    "shared world over the server",
}


# ---- reading the README and the docs ------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    line: int  # of the opening fence, 1-based
    lang: str  # bash, python, yaml, or "" (a listing)
    text: str  # the body, without the fence's indentation
    path: str = "README.md"  # relative to the checkout

    @property
    def key(self) -> str:
        return self.text.strip().splitlines()[0].strip()

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass(frozen=True)
class Command:
    line: int
    text: str  # as a shell reads it: continuations joined
    argv: tuple[str, ...]
    path: str = "README.md"

    @property
    def key(self) -> str:
        return " ".join(self.argv)

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


def readme_blocks(path: Path = README) -> list[Block]:
    """Every fenced block of one page, indented ones (inside a list item) included."""
    name = path.relative_to(ROOT).as_posix()
    blocks, lines = [], path.read_text(encoding="utf-8").splitlines()
    opening = re.compile(r"^( *)```(\w*)\s*$")
    index = 0
    while index < len(lines):
        found = opening.match(lines[index])
        if not found:
            index += 1
            continue
        indent, body = found.group(1), []
        end = index + 1
        while lines[end].strip() != "```":
            body.append(lines[end].removeprefix(indent))
            end += 1
        blocks.append(Block(index + 1, found.group(2), "\n".join(body) + "\n", name))
        index = end + 1
    return blocks


def shell_commands(block: Block) -> list[Command]:
    """The commands of a bash block: `\\` continuations and quoted strings spanning lines
    joined, comments dropped."""
    commands, buffer, start = [], "", 0
    for number, line in enumerate(block.text.splitlines(), block.line + 1):
        if not buffer:
            start = number
        buffer += line + "\n"
        if line.rstrip().endswith("\\"):
            continue
        text = buffer.replace("\\\n", " ")
        try:
            argv = shlex.split(text, comments=True)
        except ValueError:  # a quotation still open: the command goes on
            continue
        if argv:
            commands.append(Command(start, text.strip(), tuple(argv), block.path))
        buffer = ""
    assert not buffer, f"{block.where}: unterminated command {buffer!r}"
    return commands


def readme_items() -> list[tuple[str, str, Block, Command | None]]:
    """(key, where, block, command) over the docs pages then the README: each shell command,
    and each other block by its first line."""
    items = []
    for path in doc_files():
        for block in readme_blocks(path):
            if block.lang == "bash":
                items += [(c.key, c.where, block, c) for c in shell_commands(block)]
            else:
                items.append((block.key, block.where, block, None))
    return items


def _entry(key: str) -> tuple[str, str] | None:
    """The longest RUN_BY / NOT_RUN prefix of `key`: ("run"|"not run", its value)."""
    matches = [(p, "run", v) for p, v in RUN_BY.items() if key.startswith(p)]
    matches += [(p, "not run", v) for p, v in NOT_RUN.items() if key.startswith(p)]
    if not matches:
        return None
    _, kind, value = max(matches, key=lambda m: len(m[0]))
    return kind, value


def assigned(name: str) -> list[tuple[Block, Command | None]]:
    """The items `RUN_BY` gives to the test or fixture `name`, in reading order; an item
    written the same way earlier (a command's words, a block's text) is not repeated."""
    found, seen = [], set()
    for key, _, block, command in readme_items():
        same = command.argv if command is not None else (block.lang, block.text)
        if _entry(key) == ("run", name) and same not in seen:
            seen.add(same)
            found.append((block, command))
    assert found, f"RUN_BY gives {name} nothing"
    return found


# ---- running it ---------------------------------------------------------------------------------


def _sized(argv: tuple[str, ...]) -> list[str]:
    """The command with `SIZES` and `SUBSTITUTIONS` applied."""
    out = [SUBSTITUTIONS.get(word, word) for word in argv]
    for index, word in enumerate(out[:-1]):
        if word in SIZES:
            out[index + 1] = str(min(int(out[index + 1]), SIZES[word]))
    return out


def run_command(command: Command, stdin: str | None = None) -> str:
    """Run one docs command in the current folder: `ecomrlve ...` through the CLI app,
    `export NAME=...` through bash (the value as the shell computes it)."""
    argv = _sized(command.argv)
    if argv[0] == "ecomrlve":
        result = CliRunner().invoke(app, argv[1:], input=stdin)
        assert result.exit_code == 0, f"{command.where}: {command.text}\n{result.output}"
        return result.output
    if argv[0] == "export":
        name = argv[1].split("=", 1)[0]
        path = os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])
        shown = subprocess.run(
            ["bash", "-c", f'{command.text}\nprintf %s "${name}"'],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PATH": path},
        ).stdout
        os.environ[name] = shown
        return shown
    raise AssertionError(f"{command.where}: no runner for {command.text!r}")


def run_python(block: Block, replace: dict[str, str] | None = None) -> dict:
    code = block.text
    for old, new in (replace or {}).items():
        code = code.replace(old, new)
    scope: dict = {"__name__": "__readme__"}
    exec(compile(code, block.where, "exec"), scope)
    return scope


def run_assigned(name: str, replace: dict[str, str] | None = None) -> dict[str, object]:
    """Run what `RUN_BY` gives `name`, in order; return each item's output (command) or scope
    (block) by where it is written."""
    outputs: dict[str, object] = {}
    for block, command in assigned(name):
        if command is not None:
            outputs[command.where] = run_command(command)
        elif block.lang == "python":
            outputs[block.where] = run_python(block, replace)
        else:
            raise AssertionError(f"{block.where}: {name} cannot run a {block.lang!r}")
    return outputs


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Iterator[Path]:
    """The reader's folder (the docs' `data` is `data/` under it), as the current folder."""
    root = tmp_path_factory.mktemp("readme")
    (root / "configs").symlink_to(ROOT / "configs")  # the docs run from the checkout
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        yield root


@pytest.fixture(scope="module")
def seed0_shop(workdir) -> Path:
    """The Catalog and Tasks sections as written (sizes smaller): catalog, the CLI's
    generations, the SQL over them (the README's tour too) and the Python API's own run."""
    outputs = run_assigned("seed0_shop")
    assert any("sneakers" in str(o) or "families" in str(o) for o in outputs.values())
    (scope,) = [o for o in outputs.values() if isinstance(o, dict)]  # the Tasks page's Python
    assert scope["task"].task_id == scope["df"]["task_id"][0]
    listed = run_command(_cli("ecomrlve sql 'SELECT task_id FROM tasks' --format csv --data data"))
    assert TASK_ID in listed.split()  # the docs' example id is a real one
    return workdir / "data"


def _cli(text: str) -> Command:
    return Command(0, text, tuple(shlex.split(text)))


# ---- the accounting -----------------------------------------------------------------------------


def test_every_readme_block_is_accounted_for() -> None:
    pages = set(DOCS.glob("*.md"))
    assert pages and pages <= set(doc_files()), "a docs page missing from mkdocs.yml's nav"
    items = readme_items()
    assert {b.lang for _, _, b, _ in items} >= {"bash", "python", "yaml", ""}
    assert {b.path for _, _, b, _ in items} >= {"README.md", "docs/data.md", "docs/training.md"}
    unaccounted = [f"{where}: {key}" for key, where, _, _ in items if not _entry(key)]
    assert not unaccounted, "run these in a test (RUN_BY) or say why not (NOT_RUN):\n" + "\n".join(
        unaccounted
    )
    keys = [key for key, *_ in items]
    for prefix in [*RUN_BY, *NOT_RUN]:  # no stale entries
        assert any(k.startswith(prefix) for k in keys), f"no docs item starts with {prefix!r}"
    here = globals()
    for name in set(RUN_BY.values()):
        if "::" in name:
            path, test = name.split("::")
            assert f"def {test}(" in (ROOT / path).read_text(encoding="utf-8"), name
        else:
            assert name in here and f'"{name}"' in inspect.getsource(here[name]), name


def test_shell_blocks_parse_into_commands() -> None:
    block = Block(1, "bash", "a 'x\ny' # note\n# only a comment\nb --c \\\n  d\n")
    assert [c.argv for c in shell_commands(block)] == [("a", "x\ny"), ("b", "--c", "d")]
    assert _sized(("ecomrlve", "generate", "--tasks", "9000", "--task", "TASK_ID")) == [
        "ecomrlve", "generate", "--tasks", "99", "--task", TASK_ID
    ]  # fmt: skip


# ---- the sections -------------------------------------------------------------------------------


def test_environment_section(seed0_shop, workdir) -> None:
    """solve, verify, `play` fed what its comment says to type, then the Python API."""
    for block, command in assigned("test_environment_section"):
        if command is None:
            scope = run_python(block)
            assert scope["final"].done and scope["final"].info["verdict"].task_id == TASK_ID
        elif "play" in command.argv:
            typed = re.findall(r"`([^`]+)`", block.text[block.text.index("ecomrlve play") :])
            assert typed == ['search {"query": "boots"}', "view_cart", ":state"]
            shown = run_command(command, stdin="\n".join([*typed, "That is all, thanks."]) + "\n")
            assert "state_hash" in shown and "done: success=" in shown
        else:
            run_command(command)
    assert (workdir / "ref.jsonl").stat().st_size and (workdir / "verdicts.jsonl").stat().st_size


@pytest.fixture(scope="module")
def curricula(seed0_shop, prefect_harness) -> Path:
    """The Pipeline section's curriculum commands (the pipeline runs are in NOT_RUN)."""
    run_assigned("curricula")
    return seed0_shop / "curricula"


def test_pipeline_section(curricula) -> None:
    import json

    for name in ("easy", "hard"):
        manifest = json.loads((curricula / name / "manifest.json").read_text())
        assert manifest["tasks"] > 0
    assert list((curricula / "easy" / "verl").glob("*.parquet"))


def test_data_layout_listing_matches_the_store(curricula, workdir) -> None:
    """Each path of the data page's layout listing exists in the store the docs built
    (`S`, `D`, `NAME` stand for any scenario, difficulty, curriculum)."""
    ((block, _),) = assigned("test_data_layout_listing_matches_the_store")
    paths = [line.split()[0] for line in block.text.splitlines() if line.strip()]
    assert len(paths) == 9
    for path in paths:
        pattern = re.sub(r"(?<=[=/])(S|D|NAME)(?=/)", "*", path)
        assert list(workdir.glob(pattern.rstrip("/"))), f"docs list {path}; not in the store"


def _leaves(tree: dict, prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], object]]:
    for key, value in tree.items():
        if isinstance(value, dict):
            yield from _leaves(value, (*prefix, key))
        else:
            yield (*prefix, key), value


def _merged(base: dict, fragment: dict) -> dict:
    out = dict(base)
    for key, value in fragment.items():
        both = isinstance(value, dict) and isinstance(out.get(key), dict)
        out[key] = _merged(out[key], value) if both else value
    return out


def test_yaml_blocks_load_through_the_config_model() -> None:
    from ecomrlve.config import config_from_dict

    base = yaml.safe_load((ROOT / "configs" / "tiny_cpu.yaml").read_text())
    blocks = [b for b, _ in assigned("test_yaml_blocks_load_through_the_config_model")]
    assert len(blocks) == 5 and all(b.lang == "yaml" for b in blocks)
    for block in blocks:
        fragment = yaml.safe_load(block.text)
        cfg = config_from_dict(_merged(base, fragment), source=block.where)
        loaded = cfg.model_dump(mode="json")
        for path, value in _leaves(fragment):
            got = loaded
            for key in path:
                got = got[key]
            assert got == value, f"{block.where}: {'.'.join(path)}"


def test_dry_run_and_verl_print(curricula, workdir) -> None:
    """The memory plan and verl's command line: the data folder's `default` curriculum is the
    one `make run` leaves."""
    run_command(_cli('ecomrlve curriculum build --name default --where "difficulty <= 3"'))
    outputs = run_assigned("test_dry_run_and_verl_print")
    plan, verl = outputs.values()
    assert "fits: peak" in str(plan)
    assert "verl.trainer.main_ppo" in str(verl)


def test_openenv_section(seed0_shop, monkeypatch) -> None:
    """The token export and the server command as written, then both client blocks (the
    README's tour repeats the first)."""
    from ecomrlve.integrations import env_server

    served: dict = {}
    monkeypatch.setattr(env_server, "serve", lambda *a, **k: served.update(args=a, kw=k))
    monkeypatch.setenv("ECOMRLVE_ENV_TOKEN", "")  # the docs' export sets it
    items = assigned("test_openenv_section")
    commands = [c for _, c in items if c is not None]
    blocks = [b for b, c in items if c is None]
    assert [c.argv[0] for c in commands] == ["export", "ecomrlve"] and len(blocks) == 2
    token = run_command(commands[0])
    assert len(token) >= 32
    run_command(commands[1])
    world, served_token, host, port, _seats = served["args"]
    assert (served_token, host, port) == (token, "127.0.0.1", 8000)
    assert world.limits.max_sessions == 128 and TASK_ID in world.tasks.ids
    with env_server.serve_in_thread(world, served_token) as url:
        at = url.removeprefix("http://")
        for block in blocks:
            scope = run_python(block, {"127.0.0.1:8000": at})
            assert scope["opening"]  # the block reached its reset and step
            assert scope["result"].done or scope["result"].observation


# ---- the Training section (slow: it trains) -----------------------------------------------------


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Iterator[Path]:
    """The training command as written, in a folder of its own: a small store with the
    `default` curriculum `make run` leaves, `configs/tiny_cpu.yaml` replaced by TINY_RUN."""
    from ecomrlve import store
    from ecomrlve.catalogs import build_catalog
    from ecomrlve.flows.shards import build_curriculum
    from ecomrlve.generators import generate_tasks, write_tasks
    from ecomrlve.testing.training import TINY_RUN, TRAIN_PRODUCTS

    root = tmp_path_factory.mktemp("readme-train")
    # few tasks: the training page's eval plays every task of difficulty <= 2, 4 samples each
    build_catalog(root / "data", TRAIN_PRODUCTS, seed=3)
    tasks, _ = generate_tasks(root / "data", TRAINED_TASKS, seed=5, difficulty=(0, 1), max_steps=3)
    write_tasks(root / "data", tasks, "gen_s5")
    with store.exclusive_lock(root / "data"):
        build_curriculum(root / "data", "default")
    (root / "configs").mkdir()
    (root / "configs" / "tiny_cpu.yaml").write_text(yaml.safe_dump(TINY_RUN))
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        run_assigned("trained")
        yield root


@pytest.mark.slow  # SFT + 2 DAPO steps, an evaluation and 2 GRPO steps of TRL
def test_training_section(trained) -> None:
    """eval, the train_steps query and `ecomrlve view` on the run the training page's command
    wrote; then the integrations page's TRL block on that model folder
    (`data/runs/default/model`, where `make run` leaves the demo's): `ecomrlve train`'s output
    works with TRL as written."""
    outputs = run_assigned("test_training_section")
    text = "\n".join(map(str, outputs.values()))
    assert "pass^4" in text and "reward_mean" in text
    page = (trained / "experiments" / "tiny" / "report.html").read_text(encoding="utf-8")
    assert 'id="held-out-table"' in page and 'class="episode' in page  # `ecomrlve view`
    listed = run_command(_cli("ecomrlve sql 'SELECT output FROM train_runs' --format csv"))
    assert "../experiments/tiny" in listed.split()  # relative to the data folder, as the docs say
    model = trained / "data" / "runs" / "default" / "model"
    model.parent.mkdir(parents=True)
    model.symlink_to(trained / "experiments" / "tiny" / "model")
    (snippet,) = [b for b, _ in assigned(RUN_BY["from trl import GRPOConfig, GRPOTrainer"])]
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    trainer = run_python(snippet)["trainer"]
    assert trainer.state.global_step == 2
    assert all(e.verdict is not None for e in trainer.environments)  # ecom_reward judged each


@pytest.mark.slow  # the trained run
def test_regenerate_from_the_last_run(trained, prefect_harness) -> None:
    (output,) = run_assigned("test_regenerate_from_the_last_run").values()
    assert "new tasks" in str(output)
