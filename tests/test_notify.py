"""Discord notices: start, checkpoint, finish and crash reach the webhook; the URL appears nowhere."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from rocketrl.config import load_config
from rocketrl.infra.notify import DiscordNotifier
from rocketrl.ppo import trainer as trainer_module
from rocketrl.ppo.trainer import Trainer

SMALL = [
    "--env.num-arenas", "2", "--env.stepping", "serial", "--env.num-workers", "1",
    "--ppo.rollout-steps", "16", "--ppo.minibatches", "2", "--ppo.epochs", "1",
    "--model.actor-hidden", "16", "--model.critic-hidden", "16", "--run.device", "cpu",
]  # fmt: skip
SECRET_PATH = "/api/webhooks/123/secret-token"


@pytest.fixture
def webhook(monkeypatch):
    """A local webhook server (loopback only) recording every posted message."""
    received: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append(json.loads(body)["content"])
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}{SECRET_PATH}"
    monkeypatch.setenv("ROCKETRL_DISCORD_WEBHOOK", url)
    yield received
    server.shutdown()
    server.server_close()


def test_training_posts_start_checkpoint_and_finish_and_never_writes_the_url(tmp_path: Path, webhook, capsys):
    cfg = load_config(None, [*SMALL, "--run.timesteps", "64", "--run.logdir", str(tmp_path), "--run.name", "n"])
    trainer = Trainer(cfg)
    try:
        trainer.learn()
    finally:
        trainer.close()
    events = [message.split("]")[1].split(":")[0].strip() for message in webhook]
    assert events == ["start", "checkpoint", "finished"], webhook
    assert all(message.startswith("[n] ") for message in webhook)
    out = capsys.readouterr()
    for text in (out.out, out.err, repr(trainer.notifier)):
        assert "secret-token" not in text
    for path in (tmp_path / "n").rglob("*"):
        if path.is_file():
            assert b"secret-token" not in path.read_bytes(), f"webhook URL written into {path}"


def test_a_crash_is_posted_and_still_raised(tmp_path: Path, webhook, monkeypatch):
    cfg = load_config(None, [*SMALL, "--run.timesteps", "64", "--run.logdir", str(tmp_path), "--run.name", "c"])
    trainer = Trainer(cfg)

    def broken_update(self):
        raise RuntimeError("simulated failure")

    monkeypatch.setattr(trainer_module.Trainer, "_update", broken_update)
    try:
        with pytest.raises(RuntimeError, match="simulated failure"):
            trainer.learn()
    finally:
        trainer.close()
    assert any("crash" in message and "simulated failure" in message for message in webhook), webhook


def test_an_unreachable_webhook_warns_once_without_the_url(monkeypatch):
    monkeypatch.setenv("ROCKETRL_TEST_HOOK", "http://127.0.0.1:9/api/webhooks/1/secret-token")
    notifier = DiscordNotifier("ROCKETRL_TEST_HOOK", "run", timeout_s=1.0)
    with pytest.warns(UserWarning) as caught:
        assert notifier.send("start", "hello") is False
        assert notifier.send("start", "again") is False
    assert len(caught) == 1 and "secret-token" not in str(caught[0].message)
    assert "ROCKETRL_TEST_HOOK" in str(caught[0].message)


def test_no_environment_variable_means_no_notices(monkeypatch):
    monkeypatch.delenv("ROCKETRL_DISCORD_WEBHOOK", raising=False)
    notifier = DiscordNotifier("ROCKETRL_DISCORD_WEBHOOK", "run")
    assert not notifier.enabled and notifier.send("start", "x") is False


def test_a_url_in_the_config_is_refused():
    with pytest.raises(ValueError, match="never the URL"):
        load_config(None, ["--run.discord-webhook-env", "https://discord.com/api/webhooks/1/x"])
