// Package check renders the kustomize trees in deploy/k8s and checks what they produce:
// every object decodes strictly into the Kubernetes API types, and the invariants the
// stack relies on hold (probes, ports, disruption budgets, autoscalers, secrets, tags).
// It holds only tests: go test ./... in this directory.
package check
