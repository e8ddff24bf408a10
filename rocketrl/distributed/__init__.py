"""Distributed training on Ray: rollout workers as Ray actors, the learner on the driver.

- worker.py   RolloutWorker: its own BatchedEnv and a copy of the policy; collects with the single-process
              trainer's RolloutCollector and returns one bundle of numpy arrays per rollout.
- batch.py    what travels: the weights payload, rollout bundles, statistics moments; the learner's ingest.
- pool.py     connecting to (or starting) the cluster, starting, replacing and waiting on workers.
- config.py   RayConfig: the ray section of a TrainConfig (plain data, on the learning floor).
- learner.py  RayCollection: the Trainer's rollouts from the workers (ray_trainer builds that Trainer).

Ray is optional (`pip install "rocketrl[distributed]"`); only pool.py and the workers import it.
"""
