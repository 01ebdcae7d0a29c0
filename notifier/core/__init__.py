"""The notifier's pure types and decisions; nothing here imports another part of the notifier.

- `models.py`: Alertmanager's webhook payload; `incidents.py`: what a notification does to its incident
  (`decide`); `escalation_steps.py`: an escalation's position and where it goes next;
- `deliveries.py`: the page types shared by the engine, the outbox and the delivery stages;
  `page_text.py`: what a page says;
- `rejected.py`: a request refused with a 4xx; `bearer.py`: the bearer token check;
- `clock.py`: the clock everything takes; `after_commit.py`: counts made once a transaction committed.
"""
