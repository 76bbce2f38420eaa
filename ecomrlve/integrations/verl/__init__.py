"""Everything verl (issue 46: one home): `rows` the curriculum's verl row format and the task
each row describes; `launch` our config turned into verl's (`ecomrlve train --engine verl`);
`runtime` the AgentLoop and `compute_score` verl imports in its workers (named by module path
in the config); `stage` the pipeline's verl stage. Import the submodules: this package imports
none of them, so verl's workers load only `runtime`'s dependencies.
"""
