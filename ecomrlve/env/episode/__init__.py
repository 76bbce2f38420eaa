"""Playing an episode: the environment (`environment.EcomEnv`), the model's tool-call syntax
(`parser`), the simulated customer (`user`), each task's reference solution (`reference`),
replaying a trajectory to its verdict (`replay`) and several seats in one shop (`shared`).

The top of `ecomrlve.env`.
"""
