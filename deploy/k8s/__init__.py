"""vigil on Kubernetes: a kustomize base and small/large overlays generated from Python data (never text
templates) by pure functions, like the rules: settings and the rule specs → objects → YAML files checked
in under deploy/kubernetes/ → golden test (`vigil deploy kubernetes build --check`). docs/deploy.md.

One module per component: `exporters` (GPU exporter, node health, node_exporter DaemonSets),
`services` (notifier, AIOps, the Secrets), `alertmanager`, `prometheus` (+ PrometheusRules),
`victoria` (VictoriaMetrics, the remote write), `vmalert` (the global rules), `grafana` (dashboards as
ConfigMaps), `network` (NetworkPolicies); `sizes` the overlays, `sharded` what a sharded overlay adds
and changes; `layout` the files; `kustomize` renders an overlay; `checks` and `reach` check one.
"""

from .layout import DEFAULT_OUTPUT, OWNED, Inputs, default_inputs, render
from .meta import KUBERNETES_VERSION, PROMETHEUS_OPERATOR_VERSION, DeploySettings
from .sizes import SIZES

__all__ = ["DEFAULT_OUTPUT", "KUBERNETES_VERSION", "PROMETHEUS_OPERATOR_VERSION", "SIZES", "DeploySettings", "Inputs",
           "OWNED", "default_inputs", "render"]
