"""The verl row format: what a curriculum's `verl/` and `verl_val/` folders hold, and the
`Task` each row describes. `flows.shards` writes the rows (`with_verl_columns`, then
`verl_rows` per shard); verl's RLHFDataset and TRL's Parquet loaders read them; the AgentLoop
and `compute_score` (`runtime`) and the TRL environment rebuild the episode with
`task_from_verl_row`.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from ecomrlve.tasks import Task

# A curriculum's verl rows (written by `flows.shards`): DIR/curricula/NAME/verl/ holds the
# training shards. The validation rows get a folder of their own, since a `validation.parquet`
# beside the shards makes `datasets.load_dataset(".../verl")` see only the validation split.
VERL_DIR = "verl"
VERL_VAL_DIR = "verl_val"
VERL_VAL_FILE = f"{VERL_VAL_DIR}/validation.parquet"
# the name `ecomrlve.integrations.verl` registers its AgentLoop under (rows carry it)
AGENT_NAME = "ecomrlve_agent"
VERL_VAL_MAX = 256  # validation tasks: 1 in 20 of the curriculum, 1 to this many
DATA_SOURCE = "ecomrlve"
ABILITY = "ecommerce_tool_use"


def chat_messages(messages: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Role + content only: the shape verl's RLHFDataset and TRL's conversational rows read."""
    return [{"role": str(m["role"]), "content": str(m.get("content") or "")} for m in messages]


def with_verl_columns(df: pl.DataFrame) -> pl.DataFrame:
    """Add what verl rows need beyond the shard: `row_index` (position in the curriculum, unique
    per row) and `verl_prompt` (the opening chat without tool text: verl passes the tool
    schemas to the chat template itself, so baked-in tools would render twice)."""
    prompts = [
        chat_messages(initial_messages_without_tools(Task.from_row(row)))
        for row in df.iter_rows(named=True)
    ]
    message_type = pl.List(pl.Struct({"role": pl.String, "content": pl.String}))
    return df.with_columns(
        pl.int_range(pl.len(), dtype=pl.Int64).alias("row_index"),
        pl.Series("verl_prompt", prompts, dtype=message_type),
    )


def initial_messages_without_tools(task: Task) -> list[dict[str, Any]]:
    from ecomrlve.env import initial_messages

    return initial_messages(task, include_tools=False)


def verl_validation_ids(df: pl.DataFrame) -> set[str]:
    """The tasks held out as verl's validation split (a seeded hash, round-robin by scenario)."""
    from ecomrlve.train.curriculum import split_heldout

    n_val = max(1, min(VERL_VAL_MAX, df.height // 20)) if df.height >= 2 else 0
    _, heldout = split_heldout(df, n_val, seed=0)
    return set(heldout["task_id"].to_list())


def verl_rows(shard: pl.DataFrame, split: str = "train") -> pl.DataFrame:
    """The rows verl's RLHFDataset and TRL's Parquet loaders read (input: `with_verl_columns`).

    `prompt` is the opening chat (tools not in the text), `agent_name` the AgentLoop that
    plays it, `reward_model.ground_truth` the hidden goal (JSON), `extra_info` everything the
    loop and `compute_score` need to rebuild the episode: `index` (the row's position in the
    curriculum, unique), the task fields, initial state, reference calls and tool schemas.
    """
    extra = pl.struct(
        pl.lit(split).alias("split"),
        pl.col("row_index").alias("index"),
        pl.col("index").alias("task_index"),
        pl.col("task_id"),
        pl.col("scenario"),
        pl.col("difficulty"),
        pl.col("min_steps"),
        pl.col("seed"),
        pl.col("catalog_hash"),
        pl.col("initial_state"),
        pl.col("reference"),
        pl.col("events"),  # the shop's changes during the episode: served and trained alike
        pl.col("tools"),
        pl.col("prompt").alias("user_prompt"),
    )
    return shard.select(
        pl.lit(DATA_SOURCE).alias("data_source"),
        pl.lit(AGENT_NAME).alias("agent_name"),
        pl.col("verl_prompt").alias("prompt"),
        pl.lit(ABILITY).alias("ability"),
        pl.struct(pl.lit("rule").alias("style"), pl.col("goal").alias("ground_truth")).alias(
            "reward_model"
        ),
        extra.alias("extra_info"),
    )


def task_from_verl_row(extra_info: dict[str, Any], reward_model: dict[str, Any]) -> Task:
    """The `Task` a verl row describes (the inverse of `verl_rows`)."""
    return Task.from_row(
        {
            **extra_info,
            "index": extra_info.get("task_index", 0),
            "prompt": extra_info["user_prompt"],
            "goal": reward_model["ground_truth"],
        }
    )
