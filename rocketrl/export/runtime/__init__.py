"""The exported bot's own code, copied verbatim into every bot folder as the package `rocketrl_bot`.

It needs numpy, safetensors and (agent.py only) the RLBot v5 `rlbot` package, never rocketrl or torch:
obs.py builds the training observation, packet.py reads RLBot game packets, policy.py runs the actor from
model.safetensors and bot.json (attention.py: the entity attention network), agent.py is the RLBot bot (acts
every tick_skip ticks, holds in between).
"""
