"""vigil: monitoring, alerting and AIOps for GPU clusters.

This small package holds the command line, the settings and the local stack supervisor; the domain
packages (exporters, rules, notifier, oncall, aiops, dashboards) live beside it and never import it.
"""

__version__ = "0.1.0"
