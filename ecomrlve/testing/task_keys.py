"""Hypothesis over task keys: any seed, index and difficulty (0-10) of a scenario.

@pytest.mark.parametrize("scenario", scenario_names())
@any_task_key(max_examples=8)
def test_x(ctx, scenario, seed, index, difficulty): ...
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def any_task_key(max_examples: int) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """`@given` seed (31 bits), index (up to 10**6) and difficulty (0-10), derandomized: the same
    examples every run, with function-scoped fixtures (`ctx`) allowed."""

    def wrap(test: Callable[..., Any]) -> Callable[..., Any]:
        return settings(
            max_examples=max_examples,
            deadline=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture],
            derandomize=True,
        )(
            given(
                seed=st.integers(min_value=0, max_value=2**31 - 1),
                index=st.integers(min_value=0, max_value=10**6),
                difficulty=st.integers(min_value=0, max_value=10),
            )(test)
        )

    return wrap
