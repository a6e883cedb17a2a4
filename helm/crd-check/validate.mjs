// Validates the prometheus-operator objects of rendered manifests (a JSON array on stdin) against the operator's
// CRD schemas, as packaged by kubernetes-models (kubernetes-validate knows only the core Kubernetes APIs).
// Exits 1 at the first object that does not validate. Called by helm/deploy-check.sh.
import { readFileSync } from "node:fs";
import { PrometheusRule, ServiceMonitor } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1";

const models = { PrometheusRule, ServiceMonitor };
const objects = JSON.parse(readFileSync(0, "utf8"));
for (const object of objects) {
  if (object.apiVersion !== "monitoring.coreos.com/v1") continue;
  const Model = models[object.kind];
  if (!Model) {
    console.error(`no schema for ${object.kind}`);
    process.exit(1);
  }
  try {
    new Model(object).validate();
  } catch (error) {
    console.error(`${object.kind}/${object.metadata.name}: ${error.message}`);
    process.exit(1);
  }
  console.log(`${object.kind}/${object.metadata.name}: valid`);
}
