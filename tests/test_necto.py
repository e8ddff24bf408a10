"""The community bot Necto as an opponent: its inputs built from our observation agree with its RLBot bot's recipe
built from the game state (written here from its published description), its two timers run as that bot keeps
them, its five heads become car controls, and a TorchScript actor with its interface plays through `necto:PATH`."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from test_env_layer import random_state

from rocketrl.env.obs import DefaultObs
from rocketrl.league.match import MatchConfig, game_env_config, play_match
from rocketrl.policy.base import PolicyDriver
from rocketrl.policy.load import load_policy, policy_name
from rocketrl.policy.necto import NectoPolicy, advance_timers, controls_from_heads, necto_inputs
from rocketrl.sim.arena import BOOST_PADS

FLIP_XY = torch.tensor([-1.0, -1.0, 1.0])


def reference_first_step(state, controls: torch.Tensor, arena: int, car: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Necto's query (32,) and keys (1 + cars + 34, 24) on the first step after a kickoff: the ball, this car,
    teammates, opponents (others' angular velocity zero), the pads in world order; world vectors / 2300
    (angular velocity / 5.5), x and y negated for an orange car; every car's timer 0.3, every active pad's 0.4
    (small) or 1.0 (big); positions and velocities relative to this car, not turned."""
    team = state.car_team[arena]
    flip = FLIP_XY if int(team[car]) == 1 else torch.ones(3)
    order = [car] + [c for c in range(team.numel()) if c != car and team[c] == team[car]]
    order += [c for c in range(team.numel()) if team[c] != team[car]]
    keys = torch.zeros(1 + len(order) + len(BOOST_PADS), 24)
    keys[0, 3] = 1.0
    keys[0, 5:8] = state.ball_pos[arena] * flip / 2300
    keys[0, 8:11] = state.ball_vel[arena] * flip / 2300
    keys[0, 17:20] = state.ball_ang_vel[arena] * flip / 5.5
    for row, c in enumerate(order, start=1):
        keys[row, 0] = float(c == car)
        keys[row, 1 if team[c] == team[car] else 2] = 1.0
        keys[row, 5:8] = state.car_pos[arena, c] * flip / 2300
        keys[row, 8:11] = state.car_vel[arena, c] * flip / 2300
        keys[row, 11:14] = state.car_forward[arena, c] * flip
        keys[row, 14:17] = state.car_up[arena, c] * flip
        if c == car:
            keys[row, 17:20] = state.car_ang_vel[arena, c] * flip / 5.5
        keys[row, 20] = state.car_boost[arena, c] / 100
        keys[row, 21] = 0.3
        keys[row, 22] = float(state.car_on_ground[arena, c])
        keys[row, 23] = float(state.car_has_flip[arena, c])
    pads = keys[1 + len(order) :]
    pads[:, 4] = 1.0
    pads[:, 5:8] = torch.tensor([p[:3] for p in BOOST_PADS]) * flip / 2300
    pads[:, 20] = torch.tensor([1.0 if p[3] else 0.12 for p in BOOST_PADS])
    pads[:, 21] = state.pad_active[arena].float() * torch.tensor([1.0 if p[3] else 0.4 for p in BOOST_PADS])
    query = torch.cat([keys[1], controls[arena, car]])
    keys[:, 5:11] -= keys[1, 5:11].clone()
    return query, keys


@pytest.mark.parametrize("team_size", [1, 2, 3])
def test_inputs_from_our_observation_match_nectos_recipe_from_the_state(team_size: int) -> None:
    gen = torch.Generator().manual_seed(70 + team_size)
    n = 2 * team_size
    state = random_state(3, team_size, team_size, gen)
    controls = (torch.rand(3, n, 8, generator=gen) * 2 - 1).round()
    obs = DefaultObs(team_size, team_size).build(state, controls).reshape(3 * n, -1)
    cleared = torch.zeros(3 * n, 34, dtype=torch.float64), torch.zeros(3 * n, 1, dtype=torch.float64)
    (query, keys, mask), _, _ = necto_inputs(obs, *cleared)
    for arena in range(3):
        for car in range(n):
            row = arena * n + car
            ref_query, ref_keys = reference_first_step(state, controls, arena, car)
            torch.testing.assert_close(query[row, 0], ref_query, atol=1e-5, rtol=0)
            present = mask[row] == 0
            assert int(present.sum()) == 1 + n + len(BOOST_PADS) and (keys[row][~present] == 0).all()
            ours = keys[row][present]
            torch.testing.assert_close(ours[: 1 + n], ref_keys[: 1 + n], atol=1e-5, rtol=0)
            ref_pads = ref_keys[1 + n :]  # an orange car lists the pads in mirrored order (see test_nexto)
            if int(state.car_team[arena, car]) == 1:
                ref_pads = ref_pads.flip(0)
            torch.testing.assert_close(ours[1 + n :], ref_pads, atol=1e-5, rtol=0)


def test_the_timers_run_down_and_restart_as_its_bot_keeps_them() -> None:
    """A small pad active throughout shows 0.4, then 1/150 less a step, and 0.4 again once it has run out; a big
    pad starts at 1.0; an inactive pad shows 0 and starts over when active again. The car timer shows 0.3, then
    1/150 less a step (3 s less 8 ticks, / 10), and restarts at 0.3 after reaching 0."""
    small, big = 0, 3
    assert not BOOST_PADS[small][3] and BOOST_PADS[big][3]
    pads = torch.zeros(1, 34, dtype=torch.float64)
    car = torch.zeros(1, 1, dtype=torch.float64)
    active = torch.ones(1, 34)
    shown_small, shown_big, shown_car = [], [], []
    for step in range(130):
        active[0, 5] = 0.0 if 10 <= step < 20 else 1.0
        values, car_value, pads, car = advance_timers(active, pads, car)
        shown_small.append(float(values[0, small]))
        shown_big.append(float(values[0, big]))
        shown_car.append(float(car_value[0, 0]))
        if step in (9, 10, 19, 20):
            assert float(values[0, 5]) == pytest.approx({9: 0.4 - 9 / 150, 10: 0.0, 19: 0.0, 20: 0.4}[step])
    assert shown_small[:3] == pytest.approx([0.4, 0.4 - 1 / 150, 0.4 - 2 / 150])
    assert shown_big[:2] == pytest.approx([1.0, 1.0 - 1 / 150])
    restart = next(i for i in range(1, 130) if shown_small[i] > shown_small[i - 1])
    assert shown_small[restart] == pytest.approx(0.4) and 59 <= restart <= 62
    assert shown_car[:3] == pytest.approx([0.3, 0.3 - 1 / 150, 0.3 - 2 / 150])
    car_restart = next(i for i in range(1, 130) if shown_car[i] > shown_car[i - 1])
    assert shown_car[car_restart] == pytest.approx(0.3) and 45 <= car_restart <= 47


def test_the_five_heads_become_controls() -> None:
    """throttle/pitch 2 -> +1, steer 0 -> -1, and the handbrake moves steer from yaw to roll."""
    choices = torch.tensor([[2, 0, 1, 1, 1], [0, 2, 0, 0, 0], [1, 1, 0, 1, 0]])
    expected = torch.tensor(
        [
            [1.0, -1.0, 1.0, 0.0, -1.0, 1.0, 1.0, 1.0],
            [-1.0, 1.0, -1.0, 1.0, 0.0, 0.0, 0.0, 0.0],
            [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0],
        ]
    )
    assert torch.equal(controls_from_heads(choices), expected)


class _FiveHeads(torch.nn.Module):
    """An actor with Necto's interface: (query, keys, mask) -> ((5 heads of logits, (N, 1, 3|2)), weights)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(1)
        self.k = torch.nn.Linear(24, 8)
        self.heads = torch.nn.ModuleList([torch.nn.Linear(8 + 32, size) for size in (3, 3, 2, 2, 2)])

    def forward(self, obs: tuple[torch.Tensor, torch.Tensor, torch.Tensor]):
        query, keys, mask = obs
        weights = torch.softmax(self.k(keys).sum(-1) + mask, dim=-1).unsqueeze(1)  # (N, 1, K)
        pooled = torch.cat([torch.einsum("nqk,nkd->nqd", weights, self.k(keys)), query], dim=-1)
        heads: list[torch.Tensor] = [head(pooled) for head in self.heads]
        return (heads[0], heads[1], heads[2], heads[3], heads[4]), (weights, weights)


@pytest.fixture(scope="module")
def actor_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("necto") / "actor.pt"
    torch.jit.save(torch.jit.script(_FiveHeads()), str(path))
    return path


def test_the_policy_acts_greedily_per_head_and_carries_its_timers(actor_file: Path) -> None:
    obs = DefaultObs(1, 1).build(random_state(5, 1, 1, torch.Generator().manual_seed(2)), torch.zeros(5, 2, 8))
    obs = obs.reshape(10, -1)
    policy = load_policy(f"necto:{actor_file}")
    assert isinstance(policy, NectoPolicy) and policy.action_kind == "controls"
    assert policy_name(f"necto:{actor_file}") == "necto"
    state = policy.initial_state(10, "cpu")
    controls, state = policy.act(obs, state)
    inputs, _, _ = necto_inputs(obs, torch.zeros(10, 34, dtype=torch.float64), torch.zeros(10, 1, dtype=torch.float64))
    heads, _ = torch.jit.load(str(actor_file))(inputs)
    choices = torch.stack([h.reshape(10, -1).argmax(-1) for h in heads], dim=-1)
    assert torch.equal(controls, controls_from_heads(choices))
    assert torch.allclose(state[1], torch.full((1, 10, 1), 3.0, dtype=torch.float64))
    driver = PolicyDriver(policy, 10, "cpu")  # a kickoff clears the timers of the arenas that restart
    driver.act(obs)
    driver.reset(torch.tensor([True] * 2 + [False] * 8))
    assert (driver.state[1][0, :2] == 0).all() and (driver.state[1][0, 2:] == 3.0).all()


def test_a_missing_actor_file_names_where_to_get_it(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="rlbot-support/Necto/necto-model.pt"):
        load_policy(f"necto:{tmp_path / 'nope.pt'}")


def test_it_plays_full_games_but_never_joins_a_training_pool(actor_file: Path) -> None:
    from rocketrl.league.config import LeagueConfig

    config = MatchConfig(num_games=2, game_seconds=4.0, env=game_env_config(2, 1, 1, num_workers=1))
    result = play_match(load_policy(f"necto:{actor_file}"), load_policy("rule_policy"), config)
    assert result.num_games == 2
    with pytest.raises(ValueError, match=r"league.fixed_opponents: 'necto:.*' is a community bot"):
        LeagueConfig(fixed_opponents=[f"necto:{actor_file}"])
