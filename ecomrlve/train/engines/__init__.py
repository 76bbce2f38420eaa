"""Rollout engines (implementations of `ecomrlve.train.engine.RolloutEngine`)."""
