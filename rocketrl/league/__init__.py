"""League play: ratings of policies and replays of their games."""
