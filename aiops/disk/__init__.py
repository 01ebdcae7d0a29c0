"""Disk failure prediction from SMART history: simulated fleet, window features, model."""
