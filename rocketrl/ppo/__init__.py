"""PPO: rollout storage, GAE, losses, running normalizers and schedules (pure tensor math, device-agnostic)."""
