"""Find the soccar collision meshes RocketSim needs, and initialise RocketSim once per process."""

from __future__ import annotations

import importlib.util
import os
import threading
from pathlib import Path

MESHES_ENV_VAR = "ROCKETRL_COLLISION_MESHES"
_init_lock = threading.Lock()
_initialised_path: Path | None = None


class CollisionMeshesNotFound(FileNotFoundError):
    """Raised when no folder with RocketSim's soccar collision meshes can be found."""


def _has_soccar_meshes(folder: Path) -> bool:
    soccar = folder / "soccar"
    return soccar.is_dir() and any(soccar.glob("*.cmf"))


def find_collision_meshes() -> Path:
    """The folder that holds `soccar/*.cmf`.

    Looks at $ROCKETRL_COLLISION_MESHES first, then inside the installed `rlgym-rocket-league`
    package (rlgym/rocket_league/sim/collision_meshes).
    """
    override = os.environ.get(MESHES_ENV_VAR)
    if override:
        folder = Path(override).expanduser()
        if not _has_soccar_meshes(folder):
            raise CollisionMeshesNotFound(
                f"{MESHES_ENV_VAR}={override!r} does not hold soccar/*.cmf collision meshes; "
                f"point it at a folder that contains soccar/, or unset it to use the meshes of "
                f"the 'rlgym-rocket-league' package"
            )
        return folder
    spec = importlib.util.find_spec("rlgym.rocket_league.sim") if _rlgym_importable() else None
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            folder = Path(location) / "collision_meshes"
            if _has_soccar_meshes(folder):
                return folder
    raise CollisionMeshesNotFound(
        "RocketSim's soccar collision meshes were not found. Install them with "
        "`pip install rlgym-rocket-league` (they ship in rlgym/rocket_league/sim/collision_meshes), "
        f"or set {MESHES_ENV_VAR} to a folder that contains soccar/*.cmf"
    )


def _rlgym_importable() -> bool:
    try:
        return importlib.util.find_spec("rlgym.rocket_league") is not None
    except ModuleNotFoundError:
        return False


def init_rocketsim() -> Path:
    """Load the collision meshes into RocketSim (once per process) and return their folder."""
    global _initialised_path
    with _init_lock:
        if _initialised_path is None:
            import RocketSim

            folder = find_collision_meshes()
            RocketSim.init(str(folder))
            _initialised_path = folder
        return _initialised_path
