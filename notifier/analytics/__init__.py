"""On-call health analytics: how an on-call rota is doing over a period, per team, person and priority.

- `queries.py`: all the SQL, reading the store into plain `IncidentFacts` (one per incident opened in
  the period: its routing, SLA columns, the people's actions on the timeline, the pages sent);
- `health.py`: pure computations on those facts (MTTA, MTTR, pages per person and outside working
  hours, SLA compliance, escalation rate, noisiest alerts, acknowledged / acted-on share) and the
  report's JSON shape;
- `collector.py`: the same figures over a trailing window as Prometheus metrics (`/metrics`).

The definitions are written down in `docs/oncall-health.md`.
"""
