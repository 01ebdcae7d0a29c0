"""vigil exporters."""
