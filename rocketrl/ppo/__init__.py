"""PPO: rollout storage, GAE, losses, reward scaling, schedules, the update and the trainer."""
