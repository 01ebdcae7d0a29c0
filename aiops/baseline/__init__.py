"""Dynamic baselines: classify each series, fit a model per class, publish bands for the current time.

Pipeline: `train.history_from_prometheus` (streamed, a batch of series at a time) /
`train.history_from_files` → `train.train` (per series: `aiops.history.clean.prepare` →
`classify.classify` → `models.fit_model`) → `store.save_store`.
`service.BaselineService` serves `collector.BaselineCollector` and refits on a schedule.
See docs/aiops-baselines.md.
"""
