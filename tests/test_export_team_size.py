"""An exported bot in a match larger than its observation holds (4v4) or of a size it never trained at: it plays
on, seeing its nearest cars, and says so once."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from rocketrl.export.bundle import obs_spec
from rocketrl.export.runtime.agent import RocketrlBot
from rocketrl.export.runtime.obs import GameArrays, ObsBuilder, fits, nearest_cars, select_cars


def game(blue: int, orange: int) -> GameArrays:
    """A still arena: blue cars on y = -1000 * (i + 1), orange on y = +1000 * (i + 1), all at x = 0."""
    n = blue + orange
    pos = np.array(
        [[0.0, -1000.0 * (i + 1), 17.0] for i in range(blue)] + [[0.0, 1000.0 * (i + 1), 17.0] for i in range(orange)]
    )
    zeros = np.zeros((n, 3), np.float32)
    return GameArrays(
        ball_pos=np.array([0.0, 0.0, 93.0], np.float32),
        ball_vel=np.zeros(3, np.float32),
        ball_ang_vel=np.zeros(3, np.float32),
        car_pos=pos.astype(np.float32),
        car_vel=zeros,
        car_ang_vel=zeros,
        car_forward=np.tile(np.array([0.0, 1.0, 0.0], np.float32), (n, 1)),
        car_up=np.tile(np.array([0.0, 0.0, 1.0], np.float32), (n, 1)),
        car_boost=np.full(n, 33.0, np.float32),
        car_on_ground=np.ones(n, bool),
        car_has_jump=np.ones(n, bool),
        car_has_flip=np.ones(n, bool),
        car_demolished=np.zeros(n, bool),
        car_team=np.array([0] * blue + [1] * orange),
        pad_active=np.ones(34, bool),
    )


def test_a_4v4_car_sees_its_nearest_two_teammates_and_three_opponents() -> None:
    builder = ObsBuilder(obs_spec())
    g = game(4, 4)
    assert not fits(g, builder.max_teammates, builder.max_opponents) and fits(game(3, 3), 2, 3)
    index = nearest_cars(g, 1, builder.max_teammates, builder.max_opponents)  # blue car at y = -2000
    assert index.tolist() == [0, 1, 2, 4, 5, 6]  # teammates at -1000 and -3000; the three nearest orange cars
    obs = builder.build(select_cars(g, index), np.zeros((6, 8), np.float32))
    assert obs.shape == (6, builder.size) and np.isfinite(obs).all()


def test_the_bot_warns_once_naming_the_sizes_it_trained_and_was_measured_at(capsys) -> None:
    bot = SimpleNamespace(
        policy=SimpleNamespace(settings={"trained_team_sizes": ["1v1"], "measured_team_sizes": {"1v1": "..."}}),
        obs_builder=ObsBuilder(obs_spec()),
        warned=False,
    )
    RocketrlBot.warn_team_size(bot, game(4, 4))
    err = capsys.readouterr().err
    assert "this match is 4v4; the bot was trained at 1v1 and measured at 1v1" in err and "nearest cars" in err
    assert bot.warned
    RocketrlBot.warn_team_size(bot, game(1, 1))
    assert capsys.readouterr().err == ""


def test_a_card_with_figures_per_team_size_claims_exactly_those_sizes(tmp_path) -> None:
    import json

    from rocketrl.export.bundle import measured_team_sizes, tags_for

    checkpoint = tmp_path / "bot.safetensors"
    card = {
        "by_team_size": {
            "1v1": {"rule_policy": {"wins": 95, "num_games": 100}},
            "2v2": {"rule_policy": {"wins": 85, "num_games": 100}, "rotation": {"wins": 80, "num_games": 100}},
            "3v3": {},
        }
    }
    checkpoint.with_suffix(".json").write_text(json.dumps(card))
    settings = {"trained_team_sizes": ["2v2", "3v3"]}
    measured = measured_team_sizes(checkpoint, settings)
    assert measured == {
        "1v1": "95 of 100 games won against rule_policy",
        "2v2": "85 of 100 games won against rule_policy; 80 of 100 games won against rotation",
    }  # 3v3 has no figures, so it is not claimed
    assert tags_for(settings, measured) == ["1v1", "teamplay"]
    assert tags_for({"trained_team_sizes": ["2v2"]}, {}) == []  # trained in 2v2 but unmeasured: no teamplay tag
