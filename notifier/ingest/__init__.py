"""What comes in from Alertmanager: the webhook's POST from the ASGI entry to its answer (`webhook.py`),
its body parsed and refused with a 4xx when it will never be accepted (`parse.py`, which also holds the
checks every JSON body of the notifier gets), and the group commit that stores posts arriving together
in one transaction and hands each stored notification to the on-call engine (`group_commit.py`)."""
