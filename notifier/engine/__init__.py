"""The on-call engine, one module per concern (the SQL of each table in `notifier/store/`):

- `escalation.py`: an incident's escalation, in the caller's transaction — what a stored notification
  does to it (`EngineIntake.on_ingest`: open and route the incident, page tier 1, reopen, page the tier
  again on a new alert, end it and page "resolved") and one step of it (`run_step`: page the due tier,
  set the next, `core/escalation_steps.py`);
- `escalation_loop.py`: the clock-driven loop that claims due escalations and steps them, and runs the
  SLA check;
- `repage.py`: an acknowledgement that has expired restarts the policy;
- `sla.py`: acknowledge / resolve targets, breaches, and the escalation they trigger;
- `pause.py`: an escalation paused while a maintenance window holds its incident, resumed after;
- `actions.py`: what people do (acknowledge, resolve, note, escalate now, reopen);
- `heartbeat.py`: dead-man's switches, whose silence opens an incident;
- `paging.py`: the pages a tier's people get (their contact plans) and those of everyone already paged,
  returned for the caller to write (`Outbox.enqueue_pages`).
"""
