"""`verify(task, turns, catalog, config)`: replay an episode's turns on a fresh `EcomEnv` and
return its `Verdict` (what `ecomrlve.env.judge.verifier.judge` makes of the env's record).

Here rather than in the verifier because it plays the env, and the env judges with the verifier:
the layers run verifier -> environment -> replay.
"""

from __future__ import annotations

from typing import Any

from ecomrlve.config import EnvConfig
from ecomrlve.env.episode.environment import EcomEnv
from ecomrlve.env.judge.verifier import Verdict
from ecomrlve.env.shop.products import Catalog
from ecomrlve.tasks import Task

_DEFAULT_CONFIG = EnvConfig()  # read-only default (building one costs a pydantic validation)
SKIPPED_ROLES = frozenset({"tool", "user", "system"})


def assistant_turns(turns: list[Any]) -> list[Any]:
    """The turns the verifier plays: drops tool/user/system messages of a trajectory file.

    Any other role (None, a typo, a number) is played, so the env answers it with the same
    format error as in the live episode.
    """
    out = []
    for turn in turns:
        if isinstance(turn, dict) and turn.get("role") in SKIPPED_ROLES:
            continue
        out.append(turn)
    return out


def verify(
    task: Task, turns: list[Any], catalog: Catalog, config: EnvConfig | None = None
) -> Verdict:
    """Replay `turns` on a fresh env for `task`; return the verdict (never trusts the file)."""
    config = config or _DEFAULT_CONFIG
    env = EcomEnv(task, catalog, config, transcript=False)  # only the record counts
    env.reset()
    played = assistant_turns(list(turns) if isinstance(turns, list | tuple) else [turns])
    extra = 0
    for k, turn in enumerate(played):
        if env.done:
            extra = len(played) - k
            break
        env.step(turn)
    verdict = env.finish()  # the verdict of the last turn, or judged as cut short
    if extra:
        verdict.violations.append(f"ignored {extra} turn(s) after the episode ended")
    return verdict
