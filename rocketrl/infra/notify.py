"""Discord webhook notices (start, checkpoint, finish, crash).

The webhook URL is read from an environment variable (run.discord_webhook_env names it) and is
never printed, logged or written anywhere; failures are reported without it.
"""

from __future__ import annotations

import json
import os
import urllib.request
import warnings


class DiscordNotifier:
    """Posts one short message per event when the environment variable holds a webhook URL."""

    def __init__(self, env_var: str, run_name: str, timeout_s: float = 5.0) -> None:
        self._url = os.environ.get(env_var) or None
        self.env_var = env_var
        self.run_name = run_name
        self.timeout_s = timeout_s
        self._warned = False

    @property
    def enabled(self) -> bool:
        return self._url is not None

    def send(self, event: str, message: str) -> bool:
        """Post '[run] event: message'; returns whether it was delivered. Never raises."""
        if self._url is None:
            return False
        body = json.dumps({"content": f"[{self.run_name}] {event}: {message}"[:1900]}).encode()
        request = urllib.request.Request(
            self._url, data=body, headers={"Content-Type": "application/json", "User-Agent": "rocketrl"}
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                return 200 <= response.status < 300
        except Exception as error:  # a notice must never stop training; say why, without the URL
            if not self._warned:
                warnings.warn(
                    f"Discord notice failed ({type(error).__name__}); check the webhook in ${self.env_var}",
                    stacklevel=2,
                )
                self._warned = True
            return False

    def __repr__(self) -> str:  # keeps the URL out of any repr
        return f"DiscordNotifier(env_var={self.env_var!r}, enabled={self.enabled})"
