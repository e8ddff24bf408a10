"""Policies by name: 'rule_policy', 'random', the shipped bots ('pretrained', 'pretrained_team', 'gauntlet_vN'),
or the path of a training checkpoint.

A checkpoint is self-describing: its metadata holds the run's config (older checkpoints: the run
folder's config.json two levels up), so the network is rebuilt with the shape it was trained with,
and its observation normalizer is applied frozen.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from rocketrl.infra.checkpoint import CheckpointManager, load_checkpoint
from rocketrl.policy.actor_critic import ActorCritic, PolicyActor, weights_obs_size
from rocketrl.policy.base import Policy

RULE_POLICY = "rule_policy"
RANDOM_POLICY = "random"
PRETRAINED = "pretrained"
PRETRAINED_TEAM = "pretrained_team"
PRETRAINED_DIR = Path(__file__).resolve().parent.parent / "pretrained"
GAUNTLET_DIR = PRETRAINED_DIR / "gauntlet"
"""The gauntlet: every 1v1 bot shipped so far, frozen as vN.safetensors with its card vN.json (v1 the first)."""
GAUNTLET_PREFIX = "gauntlet_v"


def gauntlet_versions() -> list[int]:
    """The gauntlet's version numbers, oldest first."""
    return sorted(int(p.stem[1:]) for p in GAUNTLET_DIR.glob("v*.safetensors") if p.stem[1:].isdigit())


PRETRAINED_CHECKPOINT = GAUNTLET_DIR / f"v{max(gauntlet_versions(), default=1)}.safetensors"
"""The 1v1 bot shipped with the package (`--checkpoint pretrained`): the newest gauntlet bot, its card beside it."""
PRETRAINED_TEAM_CHECKPOINT = PRETRAINED_DIR / "team.safetensors"
"""The team bot shipped with the package (`--checkpoint pretrained_team`): one network for 1v1, 2v2 and 3v3,
trained with the team preset; its card (team.json) holds its figures per team size."""
SHIPPED_BOTS = {PRETRAINED: PRETRAINED_CHECKPOINT, PRETRAINED_TEAM: PRETRAINED_TEAM_CHECKPOINT}
"""The bots shipped with the package, by the name `--checkpoint` takes."""
SCRIPTED_GAUNTLET = (RULE_POLICY, "shadow_goalie", "ball_chaser")
"""The scripted opponents every candidate also meets in the gauntlet."""
TEAM_GAUNTLET = ("rotation",)
"""Scripted teams the gauntlet adds when teams have more than one car (a team of one plays as RulePolicy)."""
SCRIPTED_NAMES = ("shadow_goalie", "ball_chaser", "rotation")
"""The scripted policies beside RulePolicy (`rocketrl.policy.scripted.SCRIPTED_OPPONENTS`), by name."""


def gauntlet_bots() -> list[str]:
    """The gauntlet's bots by name ('gauntlet_v1', ...), oldest first."""
    return [f"{GAUNTLET_PREFIX}{v}" for v in gauntlet_versions()]


def gauntlet(team: bool = False) -> list[str]:
    """Every opponent of the gauntlet: its bots, then the scripted ones (team: the games have a team of more than
    one car, so the scripted teams of TEAM_GAUNTLET join)."""
    return [*gauntlet_bots(), *SCRIPTED_GAUNTLET, *(TEAM_GAUNTLET if team else ())]


def gauntlet_opponents(candidate: str | Path, team: bool = False) -> list[str]:
    """The opponents `rocketrl eval --gauntlet` gives `candidate`: every gauntlet opponent (`gauntlet(team)`) but the
    candidate itself, however named ('pretrained' is the newest gauntlet bot). A missing candidate file raises
    FileNotFoundError naming it, before any game."""
    path = resolve_checkpoint(candidate)
    return [o for o in gauntlet(team) if not same_checkpoint(o, path)]


def is_named_bot(spec: str | Path) -> bool:
    """Whether `spec` names a shipped bot ('pretrained', 'pretrained_team', 'gauntlet_vN') rather than a path."""
    return str(spec) in SHIPPED_BOTS or str(spec).startswith(GAUNTLET_PREFIX)


def resolve_checkpoint(spec: str | Path) -> Path:
    """The checkpoint file a `--checkpoint` value names: a shipped bot ('pretrained', 'pretrained_team',
    'gauntlet_vN'), a checkpoint path, or a run folder (runs/NAME, holding checkpoints/) for its last checkpoint.

    Raises FileNotFoundError naming the value and the fix when there is no such file.
    """
    if str(spec).startswith(GAUNTLET_PREFIX):
        path = GAUNTLET_DIR / f"v{str(spec)[len(GAUNTLET_PREFIX) :]}.safetensors"
        if not path.is_file():
            raise FileNotFoundError(f"{spec!r} is not a gauntlet bot; the gauntlet holds {', '.join(gauntlet_bots())}")
        return path
    if str(spec) in SHIPPED_BOTS:
        shipped = SHIPPED_BOTS[str(spec)]
        if not shipped.is_file():
            raise FileNotFoundError(
                f"the shipped bot {str(spec)!r} ({shipped}) is missing from this installation; reinstall rocketrl "
                "(pip install -e .) or give a checkpoint path"
            )
        return shipped
    path = Path(spec)
    if path.is_dir():
        return _last_checkpoint(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"checkpoint {str(spec)!r} does not exist; give 'pretrained', 'pretrained_team', a run folder "
            "(runs/<run>) or the path of a .safetensors checkpoint (e.g. runs/<run>/checkpoints/<file>.safetensors)"
        )
    return path


def same_checkpoint(a: str | Path, b: str | Path) -> bool:
    """Whether two specs name one checkpoint file however written ('pretrained' and its gauntlet name, a run
    folder and its last checkpoint); scripted names and missing files are compared as names."""
    if str(a) == str(b):
        return True
    try:
        return resolve_checkpoint(a).resolve() == resolve_checkpoint(b).resolve()
    except (FileNotFoundError, ValueError):
        return False  # a scripted name or a missing file: load_policy names the problem


def _run_checkpoints(run_dir: Path) -> CheckpointManager:
    """The checkpoints of the run at `run_dir` (FileNotFoundError for a folder that is not a run's, or holds no
    checkpoint yet)."""
    if not (run_dir / "checkpoints").is_dir():
        raise FileNotFoundError(
            f"{run_dir}: a folder with no checkpoints/ inside; give a run folder (runs/NAME) or a checkpoint file"
        )
    manager = CheckpointManager(run_dir / "checkpoints")
    if manager.latest() is None:
        raise FileNotFoundError(
            f"{run_dir}: its checkpoints/ folder holds no checkpoint yet; train it first or give a file"
        )
    return manager


def _last_checkpoint(run_dir: Path) -> Path:
    """The last checkpoint of the run at `run_dir` (the errors of _run_checkpoints)."""
    last = _run_checkpoints(run_dir).latest()
    assert last is not None  # _run_checkpoints refuses a run without one
    return last


def run_tail(spec: str | Path, from_step: int) -> list[Path]:
    """The checkpoints a bot spec stands for in an average from `from_step` (agent-steps) on: a run folder's every
    kept checkpoint at or past it, sorted by step; any other spec its one file (resolve_checkpoint).

    Raises FileNotFoundError naming the run, the step and the steps it kept when none is that late."""
    path = Path(spec)
    if not path.is_dir() or is_named_bot(spec):
        return [resolve_checkpoint(spec)]
    manager = _run_checkpoints(path)  # one manager: each file's header is read once
    tail = manager.since(from_step)
    if not tail:
        kept = ", ".join(f"{int(kept.stem.removeprefix('step_')):,}" for kept in manager.list())
        raise FileNotFoundError(
            f"{spec}: no checkpoint at or past {from_step:,} agent-steps (it kept steps {kept}); lower --from-step"
        )
    return tail


def gauntlet_name(spec: str | None) -> str | None:
    """A bot as users can name it: a file whose network and statistics are a gauntlet version's is that version
    ('gauntlet_vN'); a name, a missing file or any other file as written (None stays None)."""
    if not spec or is_named_bot(spec) or not Path(spec).is_file():
        return spec
    start = load_checkpoint(Path(spec))[0]
    for version in gauntlet_versions():
        shipped = load_checkpoint(GAUNTLET_DIR / f"v{version}.safetensors")[0]
        if all(
            start.get(part, {}).keys() == shipped[part].keys()
            and all(torch.equal(start[part][name], value) for name, value in shipped[part].items())
            for part in ("model", "obs_norm")
        ):
            return f"{GAUNTLET_PREFIX}{version}"
    return spec


def run_starts(init_froms: list[str | None]) -> str | None | list[str | None]:
    """What several runs started from (their `run.init_from`), each named by gauntlet_name: one value when they all
    started from one bot, else the list, run by run (runs of two generations)."""
    names = {spec: gauntlet_name(spec) for spec in set(init_froms)}  # each distinct file compared once
    starts = [names[spec] for spec in init_froms]
    return starts[0] if len(set(starts)) == 1 else starts


def checkpoint_config(path: Path, meta: dict) -> dict:
    """The training config ({section: {field: value}}) the checkpoint at `path` (metadata `meta`) was written with."""
    if isinstance(meta.get("config"), dict):
        return meta["config"]
    run_config = path.resolve().parent.parent / "config.json"
    if run_config.is_file():
        return json.loads(run_config.read_text())
    raise ValueError(
        f"{path}: the checkpoint does not record its config and no config.json was found in its run folder "
        f"({run_config}); keep checkpoints inside their run folder (<run>/checkpoints/<file>)"
    )


def policy_from_checkpoint(path: str | Path, device: str | torch.device = "cpu", deterministic: bool = False):
    """A PolicyActor with the network, weights and frozen observation normalizer of a checkpoint."""
    path = resolve_checkpoint(path)
    state, meta = load_checkpoint(path, device=device)
    return policy_from_state(state, checkpoint_config(path, meta), device, deterministic)


def policy_from_state(state: dict, config: dict, device: str | torch.device = "cpu", deterministic: bool = False):
    """A PolicyActor from a checkpoint's tensors (`state` with 'model' and optionally 'obs_norm') and the training
    config ({section: {field: value}}) they were trained with; the normalizer is applied frozen."""
    from rocketrl.env.actions import make_action_parser
    from rocketrl.policy.normalize import ObservationNormalizer

    weights = state["model"]
    obs_size = weights_obs_size(weights)
    action_kind = config.get("env", {}).get("action", "discrete")
    num_actions = make_action_parser(action_kind).num_actions
    model = ActorCritic.from_config(obs_size, num_actions, config.get("model", {}), action_kind == "discrete")
    model = model.to(device)
    model.load_state_dict(weights)
    model.eval()
    normalizer = None
    if config.get("ppo", {}).get("normalize_observations", True) and "obs_norm" in state:
        clip = config.get("ppo", {}).get("obs_clip", 10.0)
        normalizer = ObservationNormalizer(obs_size, torch.device(device), clip=clip)
        normalizer.load_state_dict(state["obs_norm"])
        normalizer.frozen = True
    return PolicyActor(model, normalizer, deterministic=deterministic)


COMMUNITY_BOTS = ("nexto", "necto")
"""Published community bots played from their actor files, named 'nexto:PATH' or 'necto:PATH': opponents to
measure against (rocketrl eval, judge's field), never to train against. They are the yardstick, and their weights
(CC BY-NC-SA) stay out of the project and its training runs, so `league.fixed_opponents` refuses them."""


def community_bot(spec: str | Path) -> tuple[str, str] | None:
    """(bot, path) for a spec naming a community bot's actor file ('nexto:PATH' -> ('nexto', 'PATH')), else None."""
    for bot in COMMUNITY_BOTS:
        if isinstance(spec, str) and spec.startswith(f"{bot}:"):
            return bot, spec[len(bot) + 1 :]
    return None


def refuse_community_bot(field: str, spec: str | Path, role: str, instead: str) -> None:
    """Raise ValueError naming `field` when `spec` is a community bot: they are measured against, never trained
    with. `role` says what the field would make of it ('a start to train from'); `instead` what to give."""
    if community_bot(spec) is not None:
        raise ValueError(
            f"{field}: {spec!r} is a community bot, a yardstick to measure by (rocketrl eval --opponents, "
            f"rocketrl judge --field), not {role}: its weights (CC BY-NC-SA) stay out of training runs. {instead}"
        )


def community_policy(bot: str, path: str | Path, device: str | torch.device = "cpu") -> Policy:
    """The community bot `bot` ('nexto' or 'necto') played from its actor file at `path`."""
    if bot == "nexto":
        from rocketrl.policy.nexto import NextoPolicy

        return NextoPolicy(path, device=device)
    from rocketrl.policy.necto import NectoPolicy

    return NectoPolicy(path, device=device)


def load_policy(
    spec: str,
    device: str | torch.device = "cpu",
    seed: int = 0,
    deterministic: bool = False,
    compile_rule: bool = False,
) -> Policy:
    """'rule_policy' (also 'rule'), 'random', 'shadow_goalie', 'ball_chaser' (scripted opponents kept out of
    training), 'rotation' (the scripted rotating team), a shipped bot ('pretrained', 'pretrained_team',
    'gauntlet_vN'), a checkpoint path, or 'nexto:PATH' / 'necto:PATH' (a community bot's actor file) -> a Policy.
    compile_rule: a scripted policy runs through torch.compile."""
    if spec in (RULE_POLICY, "rule"):
        from rocketrl.policy.rule import RulePolicy

        return RulePolicy(seed=seed, compiled=compile_rule)
    if spec == RANDOM_POLICY:
        from rocketrl.policy.random_policy import RandomPolicy

        return RandomPolicy(seed=seed)
    from rocketrl.policy.scripted import SCRIPTED_OPPONENTS

    if spec in SCRIPTED_OPPONENTS:
        return SCRIPTED_OPPONENTS[spec](seed=seed, compiled=compile_rule)
    community = community_bot(spec)
    if community is not None:
        return community_policy(*community, device=device)
    if not is_named_bot(spec) and not Path(spec).exists():
        raise FileNotFoundError(
            f"policy {spec!r} is neither 'rule_policy', 'random', {', '.join(map(repr, SCRIPTED_NAMES))}, "
            "'pretrained', 'pretrained_team', 'gauntlet_vN' nor an existing checkpoint file; give one of those "
            "(e.g. runs/<run>/checkpoints/<file>.safetensors)"
        )
    return policy_from_checkpoint(spec, device=device, deterministic=deterministic)


def policy_name(spec: str) -> str:
    """A short stable name for ratings: 'rule_policy', 'random', a named bot, '<run>/<checkpoint stem>' for a run's
    checkpoint, '<folder>/<stem>' for any other file (runs/line/step1_candidate.safetensors: 'line/step1_candidate')."""
    if spec in (RULE_POLICY, "rule"):
        return RULE_POLICY
    if spec == RANDOM_POLICY:
        return RANDOM_POLICY
    if is_named_bot(spec) or spec in SCRIPTED_NAMES:
        return spec
    community = community_bot(spec)
    if community is not None:
        return community[0]
    path = (resolve_checkpoint(spec) if Path(spec).is_dir() else Path(spec)).resolve()  # a run: its last bot
    folder = path.parent.parent if path.parent.name == "checkpoints" else path.parent
    return f"{folder.name}/{path.stem}"
