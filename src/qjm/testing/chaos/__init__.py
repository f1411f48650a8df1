"""A chaos harness: real daemons under a seeded nemesis, HA clients whose every call is
recorded, and checks of what the cluster holds and answered against that history.

`make chaos ARGS="--seed N --actions N --dir D"` (or `python -m qjm.testing.chaos`) runs it;
modules: model (a client's subtree), history (calls and their outcomes), workload (the
clients), nemesis (the faults), checker (the checks), observe (reading whole subtrees),
runner (the run), cli (the command line).
"""
