package gateway

import (
	"fmt"
	"strings"

	"github.com/plan-dev/plan/export"
	"github.com/plan-dev/plan/formats"
)

// Finish adds README.md: what to apply, and how each pool's endpoint picker is run with its
// configuration.
func (target) Finish(f export.Files, _ *formats.Plan, _ export.Options) (export.Files, error) {
	var pools []string
	for _, n := range f.Names() {
		if name, ok := strings.CutPrefix(n, "epp/"); ok {
			pools = append(pools, strings.TrimSuffix(name, ".yaml"))
		}
	}
	var b strings.Builder
	b.WriteString("# Inference gateway export\n\n")
	b.WriteString("The plan's LLM instances as vLLM Deployments behind the Kubernetes Gateway API Inference Extension\n")
	b.WriteString("and the llm-d router: an InferencePool per model, its endpoint picker's configuration in epp/,\n")
	b.WriteString("an InferenceObjective per request class.\n\n")
	b.WriteString("1. Install the CRDs: InferencePool (inference.networking.k8s.io/v1, gateway-api-inference-extension)\n")
	b.WriteString("   and InferenceObjective (llm-d.ai/v1alpha2, llm-d-router).\n")
	b.WriteString("2. Apply the objects of this directory: `kubectl apply -f .` (epp/ is not applied: it is configuration).\n")
	b.WriteString("3. Run each pool's endpoint picker as the Service the pool names, with its configuration file\n")
	fmt.Fprintf(&b, "   (the llm-d router chart's EPP, ext-proc port %d):\n\n", EPPPort)
	for _, p := range pools {
		fmt.Fprintf(&b, "   - `%s-epp`: `kubectl create configmap %s-epp-config --from-file=config.yaml=epp/%s.yaml`\n", p, p, p)
	}
	b.WriteString("\n4. Route the Gateway's HTTPRoute to the pools (backendRefs of kind InferencePool). A request selects\n")
	b.WriteString("   its class's objective, and so its priority, by the header `x-gateway-inference-objective: <name>`.\n\n")
	b.WriteString("`plan export --check DIR` validates an edited directory and reads it back into the plan's instances,\n")
	b.WriteString("pools and objectives.\n")
	return f, f.Put(export.ReadmeFile, []byte(b.String()), "a file named README.md")
}
