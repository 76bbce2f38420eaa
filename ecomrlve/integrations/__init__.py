"""The env where RL users already are: verl (`verl.py`), TRL (`trl.py`) and an OpenEnv server
(`env_server.py`). Each module imports its framework lazily; install the matching extra
(`pip install ecomrlve[verl]`, `[trl]`, `[server]`)."""
