"""vigil notifier: receives Alertmanager's webhook, keeps incidents, pages the on-call (docs/notifier.md)."""
