"""The on-call engine, one module per concern (its SQL lives in `notifier/store/`):

- `intake.py`: what a stored notification does (open and route the incident, page tier 1, reopen,
  page the tier again on a new alert, end the escalation and page "resolved");
- `escalation.py`: the clock-driven loop that pages due tiers and advances them (`steps.py`: where an
  escalation goes next);
- `sla.py`: acknowledge / resolve targets, breaches, and the escalation they trigger;
- `actions.py`: what people do (acknowledge, resolve, note, escalate now, reopen);
- `paging.py`: pages for a tier's people (their contact plans) and for everyone already paged;
- `pause.py`: an escalation paused while a maintenance window holds its incident, resumed after.
"""
