"""Job sources for `exporters.jobs`: Slurm, container cgroups and Kubernetes pod-resources."""
