"""vigil dashboards."""
