"""vigil rules."""
