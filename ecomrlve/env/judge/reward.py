"""The reward: a sum of named components, clipped, returned with its breakdown.

Components (weights from `EnvConfig.reward_weights`, defaults in brackets):

* `success` [+1.0]      the verifier's end-state judgement (0 or the weight);
* `step_bonus` [+0.1]   per goal milestone reached (an acceptable item shown, the order in
                        question read, the policy row the request needs retrieved, a correct
                        item in the cart, a correct write…: `env.judge.goal_progress`), each
                        once, counted up to `task.min_steps`, so extra calls can never earn
                        more than the reference does. Reads that touch nothing the goal needs
                        earn nothing. In a failed episode it only offsets penalties: it is cut
                        to what keeps the total at or below 0;
* `waste` [−0.1]        per call that does not advance: a failed call, an exact repeat (a write
                        tool called again with the same arguments; a read tool called again
                        with the same arguments while the state has not changed), or a write
                        (add, remove, checkout, cancel, return, exchange, recommend…) on an
                        id outside the goal's relevant/needed ids. Reads of such ids are
                        free: charging a look at a wrong candidate would tell the policy which
                        candidate is right, so the penalty itself would leak the hidden goal;
* `efficiency` [+0.2]   when successful with at most `task.min_steps` tool calls;
* `format` [−0.2]       per malformed assistant turn;
* `hallucination` [−0.2] per id used in arguments that the agent had never been shown.

Guarantees: a failed episode's total is at most 0, and a successful one's at least
`SUCCESS_FLOOR` × the success weight, so no failure is ever paid more than any success of the
same task. The total is clipped to `EnvConfig.reward_range` (default [−1.0, 2.5]: the best reachable
reward is 1 + 0.1·min_steps + 0.2, so min_steps up to 13 is never clipped at the top, and a
flood of penalties bottoms out at −1). With `binary_reward` the reward is 1.0 on success and
0.0 otherwise (DAPO's dynamic sampling filters groups by this value); the shaped components are
still reported.
"""

from __future__ import annotations

from ecomrlve.config import EnvConfig
from ecomrlve.env.world.record import EpisodeRecord

COMPONENTS: tuple[str, ...] = (
    "success",
    "step_bonus",
    "waste",
    "efficiency",
    "format",
    "hallucination",
)


SUCCESS_FLOOR = 0.1


def reward_components(
    record: EpisodeRecord, *, success: bool, min_steps: int, config: EnvConfig
) -> dict[str, float]:
    """Each named component's weighted value for one finished episode."""
    weights = config.reward_weights
    milestones = sum(call.milestones for call in record.calls)
    wasted = sum(1 for call in record.calls if call.wasted)
    unseen = sum(len(call.unseen_ids) for call in record.calls)
    efficient = success and len(record.calls) <= min_steps
    values = {
        "success": weights.success if success else 0.0,
        "step_bonus": round(weights.step_bonus * min(milestones, min_steps), 6),
        "waste": round(weights.waste * wasted, 6),
        "efficiency": weights.efficiency if efficient else 0.0,
        "format": round(weights.format * record.malformed_turns, 6),
        "hallucination": round(weights.hallucination * unseen, 6),
    }
    if not success:  # shaping may offset penalties, never pay for a failure
        penalties = -sum(v for k, v in values.items() if k != "step_bonus" and v < 0)
        values["step_bonus"] = round(min(values["step_bonus"], penalties), 6)
    return {name: (value or 0.0) for name, value in values.items()}  # no "-0.0" in reports


def total_reward(components: dict[str, float], *, success: bool, config: EnvConfig) -> float:
    """The scalar reward: binary success, or the clipped sum of the components."""
    if config.binary_reward:
        return 1.0 if success else 0.0
    low, high = config.reward_range
    total = sum(components.values())
    if success:
        total = max(total, SUCCESS_FLOOR * config.reward_weights.success)
    else:
        total = min(total, 0.0)
    return round(min(max(total, low), high), 6)
