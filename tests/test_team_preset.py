"""The "team" preset: it loads, starts from the shipped 1v1 bot without imitation, its curriculum goes 2v2 then
3v3 with self-play and a snapshot pool at every stage and scripted teams as a minority, its rewards share among
teammates and pay rotation, and the league plays the rotation team."""

from __future__ import annotations

from pathlib import Path

import torch

from rocketrl.config import load_config
from rocketrl.env.config import EnvConfig
from rocketrl.env.rewards import RewardConfig
from rocketrl.league.config import LeagueConfig
from rocketrl.league.curriculum import load_curriculum
from rocketrl.league.league import League
from rocketrl.league.plan import ArenaPlan
from rocketrl.policy.scripted import Rotation

PRESETS = Path(__file__).resolve().parent.parent / "rocketrl" / "configs" / "presets"


def test_the_team_preset_loads_and_its_stages_parse() -> None:
    cfg = load_config(PRESETS / "team.yaml")
    rewards = RewardConfig.from_yaml(cfg.env.rewards)
    assert rewards.team_spirit == 0.5
    # the pull toward the ball goes to each team's first man only, and nobody back costs the team
    assert rewards.weights["first_man_to_ball"] > 0 and rewards.weights["nobody_back"] > 0
    assert rewards.weights.get("velocity_player_to_ball", 0.0) == 0.0
    stages = load_curriculum(cfg.league.curriculum).stages
    assert [(s.blue_size, s.orange_size) for s in stages] == [(2, 2), (3, 3)]
    assert cfg.run.init_from == "gauntlet_v1" and cfg.ppo.imitation_coef == 0.0
    for stage in stages:
        assert stage.opponents["selfplay"] > 0 and stage.opponents["checkpoint"] > 0, stage.name
        scripted = stage.opponents.get("rule", 0) + stage.opponents.get("rotation", 0)
        assert 0 < scripted < 0.5 * sum(stage.opponents.values()), stage.name
    assert all(s.opponents.get("rotation", 0) > 0 for s in stages)


def test_rotation_arenas_get_the_rotation_team(tmp_path) -> None:
    plan = ArenaPlan(8, 2, 2, {"selfplay": 0.5, "rule": 0.25, "rotation": 0.25})
    assert plan.counts == {"selfplay": 4, "checkpoint": 0, "rule": 2, "rotation": 2}
    assert [slot.kind for slot in plan.slots] == ["rule", "rotation"]
    league = League(LeagueConfig(opponents={"selfplay": 0.5, "rotation": 0.5}), tmp_path, torch.device("cpu"))
    league.assign_opponents(plan)
    assert [slot.name for slot in plan.slots] == ["rule_policy", "rotation"]
    assert isinstance(plan.slots[1].driver.policy, Rotation)
    assert set(league.recent) == {"checkpoint", "rule", "rotation"}
    EnvConfig(num_arenas=8, blue_size=2, orange_size=2)  # the sizes of the plan are valid arenas
