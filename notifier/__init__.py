"""vigil notifier."""
