"""The Numenta Anomaly Benchmark: corpus loading (`corpus`), scoring (`scoring`), evaluation of
detectors with tuned and held-out thresholds (`evaluate`) and the benchmark record (`record`)."""
