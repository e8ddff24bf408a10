"""League play: the games between policies (match.py), ratings of policies and replays of their games."""
