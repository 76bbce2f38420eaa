"""Fixtures and probes that tests and benchmarks share (importable, no sys.path edits).

* `env_tasks`: the small fixture catalog and hand-made tasks, one per goal kind;
* `fuzzer`: generated tasks of every scenario (`task_pool`, `generated_tasks`) and adversarial
  turns (`Fuzzer`);
* `episode_check`: `play_checked` / `fuzz_episode`, the env's invariants checked every turn;
* `leaks`: `LeakScanner` (what the agent sees vs the hidden goal) and `goal_decoy`;
* `answers`: the reward tests' answer checks (hand-written `Case`s, `judge_rewordings`);
* `reward_probes`: scripted policies that probe the reward;
* `shop_probes`: policy answers written from a policy book (this store's, or a memorised one of
  another catalog seed);
* `task_keys`: `any_task_key`, hypothesis over a scenario's seeds, indices and difficulties;
* `training`: tiny Qwen3 models/tokenizers built offline and a small training store;
* `endpoint`: the endpoint tests' and benchmark's world (a tiny Qwen3 warmed up by SFT);
* `served`: the env server's test world (`served_world`) and client (`sync_client`);
* `loopback`: an OpenAI-compatible server (vLLM's response schema) of a local model folder,
  for the endpoint tests and benchmark;
* `baseline`: a shallow scripted agent (first search hit, no questions, no retries, no
  arithmetic) that `benchmarks/difficulty.py` plays against the references;
* `bench`: the benchmark scripts' generated store (built once, reused) and aligned table;
* `competing`: shared-world fixtures (tasks that contend for one item, one customer each) and
  scripted seats (`ReferenceSeat`, `ClaimingSeat`) for `tests/test_shared_world.py` and
  `benchmarks/competing.py`.
"""
