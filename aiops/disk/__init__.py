"""Disk failure prediction from SMART history: simulated fleet, window features, model.

The file names of a trained model live here, not in `model`, so that callers can look for a model
without importing scikit-learn.
"""

MODEL_FILE = "disk_model.joblib"
METADATA_FILE = "disk_model.json"
