"""vigil aiops."""
