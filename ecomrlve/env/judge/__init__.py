"""Judging an episode: the goal's progress (`goal_progress`), the final message's facts
(`facts`) and claims (`claims`) checked against what the episode showed and did, and the verdict
and shaped reward (`verifier`, `reward`).

Above `shop` and `world`, below `episode`.
"""
