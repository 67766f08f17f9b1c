package run

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/registry/system"
	"github.com/plan-dev/plan/internal/registry/systems"
	"github.com/plan-dev/plan/planner"
)

// PolicyNames lists the registry's runtime policies, comma-separated, for help and errors.
func PolicyNames(reg *systems.Registry) string {
	var n []string
	for _, r := range reg.Policies().Policies() {
		n = append(n, r.Name)
	}
	return strings.Join(n, ", ")
}

// LoadPlanDeployment reads a plan and builds its deployment; every problem is a usage error
// naming the file.
func LoadPlanDeployment(reg *systems.Registry, path string) (*formats.Plan, *dataplane.Deployment, error) {
	p, dep, _, err := LoadPlanDeploymentPolicy(reg, path)
	return p, dep, err
}

// LoadPlanDeploymentPolicy also returns the plan's default runtime policy.
func LoadPlanDeploymentPolicy(reg *systems.Registry, path string) (*formats.Plan, *dataplane.Deployment, string, error) {
	p, err := formats.ReadInto[*formats.Plan](path, reg.Sections())
	if err != nil {
		return nil, nil, "", UsageError(err)
	}
	dep, pol, err := reg.Deploy(p)
	if err != nil {
		var el formats.ErrorList
		if errors.As(err, &el) {
			return nil, nil, "", UsageError(el.WithFile(path))
		}
		return nil, nil, "", UsageErrorf("%s: %v", path, err)
	}
	return p, dep, pol, nil
}

// ResolvePlanArg is the plan a command reads: its argument, else ./plan.json.
func ResolvePlanArg(args []string) (string, error) {
	if len(args) == 1 {
		return args[0], nil
	}
	if _, err := os.Stat("plan.json"); err == nil {
		return "plan.json", nil
	}
	return "", UsageErrorf("no plan given and no ./plan.json: run `plan solve` first, or pass PLAN")
}

// ParseParams reads repeated --param KEY=VALUE into a map (nil when none is given).
func ParseParams(kv []string) (map[string]string, error) {
	if len(kv) == 0 {
		return nil, nil
	}
	m := map[string]string{}
	for _, s := range kv {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return nil, UsageErrorf("--param %q: must be KEY=VALUE", s)
		}
		m[k] = v
	}
	return m, nil
}

// ReadPlanSystem reads a plan and finds the system that planned it; every problem is a usage
// error naming the file.
func ReadPlanSystem(reg *systems.Registry, path string) (*formats.Plan, system.Plugin, error) {
	p, err := formats.ReadInto[*formats.Plan](path, reg.Sections())
	if err != nil {
		return nil, nil, UsageError(err)
	}
	sys, err := reg.ForPlan(p)
	if err != nil {
		return nil, nil, UsageErrorf("%s: %v", path, err)
	}
	return p, sys, nil
}

// StaleChecker is a plan checker that tells which figures a plan states by a rule older
// than the one its system writes by now (ppipesys: a PPipe model stating its pipelines'
// capacity, not what it serves within its SLO). Such a plan passes verification, so
// simulate and serve run it with a warning (WarnStale); plan check fails each of them.
type StaleChecker interface {
	Stale(p *formats.Plan) []planner.Check
}

// StaleChecks are ck's stale-rule findings on p (none where ck tells none).
func StaleChecks(ck planner.Checker, p *formats.Plan) []planner.Check {
	if sc, ok := ck.(StaleChecker); ok {
		return sc.Stale(p)
	}
	return nil
}

// WarnStale prints, on stderr, one warning naming the plan file per figure p states by an
// older rule of its system (StaleChecks): the plan runs, but states more than it serves.
// Warnings print under --quiet too (they are not progress).
func WarnStale(io *IO, reg *systems.Registry, path string, p *formats.Plan) {
	s, err := reg.ForPlan(p)
	if err != nil {
		return
	}
	for _, c := range StaleChecks(system.CheckerOf(s), p) {
		fmt.Fprintf(io.Err, "plan: warning: %s: %s (plan check fails it)\n", path, c.Line)
	}
}
