"""History input for AIOps: read metric series from Prometheus or files, clean them, write backfill.

- `prometheus.PrometheusReader` reads `query_range` in chunks (Prometheus refuses more than 11,000
  points per series and query); `prometheus_batches.BatchedHistory` lists a selector's series and
  reads them a bounded batch at a time, so memory grows with the batch, not with the fleet.
- `files.read_series_file` reads CSV (long `timestamp,value[,labels…]` or wide) and Parquet files.
- `clean.regularize` puts irregular samples on a regular grid with bounded interpolation (long gaps stay
  gaps); `clean.counter_rate` turns a counter into a per-second rate across resets.
- `openmetrics.write_openmetrics` writes a file that `promtool tsdb create-blocks-from openmetrics`
  accepts, for backfilling Prometheus.
"""

from vigil.aiops.history.series import HistoryError, Series

__all__ = ["HistoryError", "Series"]
