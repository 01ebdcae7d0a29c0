"""vigil oncall."""
