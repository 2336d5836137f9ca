"""Replay a trace under another trim policy.

``engine`` (the walk, as named passes), ``_memory`` (the simulated memory),
``result`` (what a replay produces), ``findings`` (the linter on replayed and
recorded payloads), ``calls`` (which calls, where in the stream), ``probes``
(the forgetting diagnosis), ``report`` (the CLI's output) and
``counterfactual`` (send a replayed payload again).
"""
