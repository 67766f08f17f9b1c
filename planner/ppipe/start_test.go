package ppipe

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/solver"
)

// TestStartKeepsReplicasInOrder: a plan from a restricted space (which has no symmetry rows)
// may use a later replica of a type sequence and not an earlier one. As the full model's MIP
// start it must still satisfy every row — HiGHS drops an infeasible start, and with it the
// incumbent the last phase was to improve (corpus case-1-14 at 20 s: the full MILP restarted
// from nothing and ended 1.6% short of the optimum). start reorders the replicas' pipelines.
func TestStartKeepsReplicasInOrder(t *testing.T) {
	gp := []gpuSpec{specL4, specP4}
	in := Inputs{Profiles: []*formats.Profile{genProfile(5, 1, 4, gp, 4)}, Cluster: genCluster(gp, []int{6, 10}, 30)}
	p, err := prepare(in, Options{Alpha: DefaultAlpha, MaxPartitions: 2, Replicas: 1, ReplicasPerLength: true, Deterministic: true, TimeLimit: time.Minute}.withDefaults())
	if err != nil {
		t.Fatal(err)
	}
	s := testSession(p)
	cfg := spaceConfig{P: 2, replicas: 1, perLength: true}
	spaces, err := s.spaces(cfg)
	if err != nil {
		t.Fatal(err)
	}
	full := p.build(spaces, cfg)
	np, err := s.warmStart(spaces, full)
	skipWithoutSolver(t, err)
	if err != nil {
		t.Fatal(err)
	}
	// Move every used first replica's pipeline to the replica after it.
	a := make(assignment, len(np.best))
	moved := 0
	for mi, ms := range spaces {
		a[mi] = slices.Clone(np.best[mi])
		for li := 0; li+1 < len(ms.tmpls); li++ {
			if ms.tmpls[li].replica == 0 && ms.tmpls[li+1].replica == 1 && a[mi][li] != nil && a[mi][li+1] == nil {
				a[mi][li], a[mi][li+1] = nil, a[mi][li]
				moved++
			}
		}
	}
	if moved == 0 {
		t.Fatal("the NP plan uses no first replica: the fixture does not test the reordering")
	}
	checkStart(t, full.m, full.start(a))
	if got := p.objective(p.pipes(spaces, a, 1)); math.Abs(got-np.obj) > 1e-9*np.obj {
		t.Errorf("the moved plan scores %g, the NP plan %g", got, np.obj)
	}
}

// checkStart fails t where the MIP start vals breaks a bound or a row of m (HiGHS drops an
// infeasible start).
func checkStart(t *testing.T, m *solver.Model, vals []float64) {
	t.Helper()
	for v := range m.NumVars() {
		lb, ub := m.VarBounds(solver.Var(v))
		if vals[v] < lb-1e-9 || vals[v] > ub+1e-9 {
			t.Errorf("variable %s = %g outside [%g, %g]", m.VarName(solver.Var(v)), vals[v], lb, ub)
		}
	}
	for i := range m.NumRows() {
		lb, ub := m.RowBounds(i)
		v := 0.0
		for _, term := range m.RowTerms(i) {
			v += term.Coef * vals[term.Var]
		}
		if v < lb-1e-6*math.Max(1, math.Abs(lb)) || v > ub+1e-6*math.Max(1, math.Abs(ub)) {
			t.Errorf("row %s: %g outside [%g, %g]", m.RowName(i), v, lb, ub)
		}
	}
}

// warmStart is the warm-start phase as the tests take it: the NP plan mapped onto full's
// variables (ppipe runs warmPlan before it builds the full space, then warmFrom).
func (s *session) warmStart(spaces []*modelSpace, full *built) (incumbent, error) {
	np, err := s.warmPlan()
	if err != nil {
		return incumbent{}, err
	}
	return warmFrom(s.p, spaces, full, np), nil
}
