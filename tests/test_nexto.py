"""The community bot Nexto as an opponent: its inputs built from our observation agree with its own recipe
built from the game state (written here from its published description, world frame first), and a TorchScript
actor with its interface plays full games through `nexto:PATH`."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from test_env_layer import make_state, random_state

from rocketrl.env.obs import DefaultObs
from rocketrl.league.match import MatchConfig, game_env_config, play_match
from rocketrl.policy.load import load_policy, policy_name
from rocketrl.policy.nexto import NUM_KEYS, NextoPolicy, nexto_inputs
from rocketrl.sim.arena import BOOST_PADS

FLIP_XY = torch.tensor([-1.0, -1.0, 1.0])


def reference_inputs(state, controls: torch.Tensor, arena: int, car: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Nexto's query (32,) and keys (3 + cars - 1 + 34, 24) for one car, from the state: every object's world
    vectors / 2300 (angular velocity / 5.5), x and y negated when the car is orange, the cars in the order this
    car, teammates, opponents (others' angular velocity zero: our observation does not carry it), then the ball,
    then the pads in world order at their own positions; positions made relative to the car and every vector
    turned so that its heading is +y."""
    team = state.car_team[arena]
    flip = FLIP_XY if int(team[car]) == 1 else torch.ones(3)
    mates = [c for c in range(team.numel()) if c != car and team[c] == team[car]]
    opponents = [c for c in range(team.numel()) if team[c] != team[car]]

    def car_key(c: int, is_self: bool) -> torch.Tensor:
        key = torch.zeros(24)
        key[0] = float(is_self)
        key[1 if team[c] == team[car] else 2] = 1.0
        key[5:8] = state.car_pos[arena, c] * flip / 2300
        key[8:11] = state.car_vel[arena, c] * flip / 2300
        key[11:14] = state.car_forward[arena, c] * flip
        key[14:17] = state.car_up[arena, c] * flip
        if is_self:
            key[17:20] = state.car_ang_vel[arena, c] * flip / 5.5
        key[20] = state.car_boost[arena, c] / 100
        key[21] = float(state.car_demolished[arena, c])
        key[22] = float(state.car_on_ground[arena, c])
        key[23] = float(state.car_has_flip[arena, c])
        return key

    ball = torch.zeros(24)
    ball[3] = 1.0
    ball[5:8] = state.ball_pos[arena] * flip / 2300
    ball[8:11] = state.ball_vel[arena] * flip / 2300
    ball[17:20] = state.ball_ang_vel[arena] * flip / 5.5
    pads = torch.zeros(len(BOOST_PADS), 24)
    pads[:, 4] = 1.0
    pads[:, 5:8] = torch.tensor([p[:3] for p in BOOST_PADS]) * flip / 2300
    pads[:, 20] = torch.tensor([1.0 if p[3] else 0.12 for p in BOOST_PADS])
    pads[:, 21] = state.pad_active[arena].float()
    me = car_key(car, True)
    keys = torch.stack([me, *(car_key(c, False) for c in mates + opponents), ball, *pads])
    keys[:, 5:8] -= me[5:8]
    theta = math.atan2(float(me[11]), float(me[12]))
    for start in (5, 8, 11, 14, 17):
        x, y = keys[:, start].clone(), keys[:, start + 1].clone()
        keys[:, start] = math.cos(theta) * x - math.sin(theta) * y
        keys[:, start + 1] = math.sin(theta) * x + math.cos(theta) * y
    return torch.cat([me, controls[arena, car]]), keys


@pytest.mark.parametrize("team_size", [1, 2, 3])
def test_inputs_from_our_observation_match_nextos_recipe_from_the_state(team_size: int) -> None:
    gen = torch.Generator().manual_seed(40 + team_size)
    n = 2 * team_size
    state = random_state(4, team_size, team_size, gen)
    controls = (torch.rand(4, n, 8, generator=gen) * 2 - 1).round()
    obs = DefaultObs(team_size, team_size).build(state, controls)
    query, keys, mask = nexto_inputs(obs.reshape(4 * n, -1))
    assert query.shape == (4 * n, 1, 32) and keys.shape == (4 * n, NUM_KEYS, 24) and mask.shape == (4 * n, NUM_KEYS)
    for arena in range(4):
        for car in range(n):
            row = arena * n + car
            ref_query, ref_keys = reference_inputs(state, controls, arena, car)
            torch.testing.assert_close(query[row, 0], ref_query, atol=1e-5, rtol=0)
            present = mask[row] == 0
            assert int(present.sum()) == 1 + (n - 1) + 1 + len(BOOST_PADS)
            assert torch.isinf(mask[row][~present]).all() and (keys[row][~present] == 0).all()
            ours = keys[row][present]
            torch.testing.assert_close(ours[: n + 1], ref_keys[: n + 1], atol=1e-5, rtol=0)  # cars, ball
            # Pads: an orange car's observation lists pad 33 - i where blue's lists pad i, at pad i's
            # blue-side place, which is pad 33 - i's place seen from orange: the same 34 keys in reverse.
            ref_pads = ref_keys[n + 1 :]
            if int(state.car_team[arena, car]) == 1:
                ref_pads = ref_pads.flip(0)
            torch.testing.assert_close(ours[n + 1 :], ref_pads, atol=1e-5, rtol=0)


def test_a_ball_to_the_left_of_a_car_facing_plus_x_is_at_minus_x_in_its_frame() -> None:
    """Hand-computed: the blue car at (1000, 0, 17) faces +x; the ball 500 uu to its left (+y) and 76 uu up
    sits at (-500, 0, 76) / 2300 in Nexto's frame, where the heading is +y and the right side +x."""
    forward = torch.tensor([[[1.0, 0.0, 0.0], [0.0, -1.0, 0.0]]])
    car_pos = torch.tensor([[[1000.0, 0.0, 17.0], [0.0, 3000.0, 17.0]]])
    state = make_state(1, 1, 1, car_pos=car_pos, car_forward=forward, ball_pos=torch.tensor([[1000.0, 500.0, 93.0]]))
    obs = DefaultObs(1, 1).build(state, torch.zeros(1, 2, 8))
    _, keys, mask = nexto_inputs(obs[0])
    ball = keys[0][mask[0] == 0][2]
    assert ball[3] == 1.0
    torch.testing.assert_close(ball[5:8], torch.tensor([-500.0, 0.0, 76.0]) / 2300, atol=1e-6, rtol=0)
    opponent = keys[0][mask[0] == 0][1]
    assert opponent[2] == 1.0  # an opponent
    # (-1000, 3000) from the car: 1000 uu behind it (-y in its frame) and 3000 to its left (-x).
    torch.testing.assert_close(opponent[5:7], torch.tensor([-3000.0, -1000.0]) / 2300, atol=1e-6, rtol=0)


class _AttentionActor(torch.nn.Module):
    """An actor with Nexto's interface: (query (N,1,32), keys (N,K,24), mask (N,K)) -> (logits (N,90),
    (weights, weights)); the mask is added to the attention logits, as in Nexto's actor."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.q = torch.nn.Linear(32, 16)
        self.k = torch.nn.Linear(24, 16)
        self.out = torch.nn.Linear(16, 90)

    def forward(self, obs: tuple[torch.Tensor, torch.Tensor, torch.Tensor]):
        query, keys, mask = obs
        scores = torch.einsum("nqd,nkd->nqk", self.q(query), self.k(keys)) + mask.unsqueeze(1)
        weights = torch.softmax(scores, dim=-1)
        logits = self.out(torch.einsum("nqk,nkd->nqd", weights, self.k(keys)))[:, 0]
        return logits, (weights, weights)


@pytest.fixture(scope="module")
def actor_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("nexto") / "actor.pt"
    torch.jit.save(torch.jit.script(_AttentionActor()), str(path))
    return path


def test_the_policy_acts_greedily_with_the_actors_logits(actor_file: Path) -> None:
    gen = torch.Generator().manual_seed(3)
    obs = DefaultObs(1, 1).build(random_state(6, 1, 1, gen), torch.zeros(6, 2, 8)).reshape(12, -1)
    policy = load_policy(f"nexto:{actor_file}")
    assert isinstance(policy, NextoPolicy) and policy.action_kind == "discrete"
    actions, state = policy.act(obs, policy.initial_state(12, "cpu"))
    logits, _ = torch.jit.load(str(actor_file))(nexto_inputs(obs))
    assert state is None and torch.isfinite(logits).all()
    assert torch.equal(actions, logits.argmax(dim=-1))
    assert policy_name(f"nexto:{actor_file}") == "nexto"


def test_a_missing_or_wrong_actor_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="rlbot-support/Nexto/nexto-model.pt"):
        load_policy(f"nexto:{tmp_path / 'nope.pt'}")
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a model")
    with pytest.raises(ValueError, match="not a TorchScript actor"):
        load_policy(f"nexto:{bad}")


def test_it_plays_full_games_on_either_side(actor_file: Path) -> None:
    config = MatchConfig(num_games=2, game_seconds=4.0, env=game_env_config(2, 1, 1, num_workers=1))
    result = play_match(load_policy("rule_policy"), load_policy(f"nexto:{actor_file}"), config)
    assert result.num_games == 2 and {g.a_team for g in result.games} == {0, 1}


def test_a_training_run_refuses_it_as_an_opponent(actor_file: Path) -> None:
    """A community bot is the yardstick: measured against, never put in a training run's pool."""
    from rocketrl.league.config import LeagueConfig

    refused = r"league.fixed_opponents: 'nexto:.*' is a community bot.*not an opponent to train"
    with pytest.raises(ValueError, match=refused):
        LeagueConfig(opponents={"selfplay": 0.5, "checkpoint": 0.5}, fixed_opponents=[f"nexto:{actor_file}"])
    with pytest.raises(ValueError, match="community bot"):
        LeagueConfig(fixed_opponents=["gauntlet_v1", "nexto:elsewhere/nexto-model.pt"])
    assert LeagueConfig(fixed_opponents=["gauntlet_v1"]).fixed_opponents == ["gauntlet_v1"]
