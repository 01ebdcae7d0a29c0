"""Deployment beyond one machine: Kubernetes manifests, systemd units, container images and the HA topology.

Everything here is generated from data structures (never text templates) by pure functions; the CLI
(`vigil deploy ...`) lives in `vigil/`.
"""
