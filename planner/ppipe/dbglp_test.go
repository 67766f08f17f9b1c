package ppipe

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/demo"
	"github.com/plan-dev/plan/solver"
)

func TestDebugLP(t *testing.T) {
	if os.Getenv("DEMOLP") == "" {
		t.Skip()
	}
	pr, _ := demo.Profile()
	c, _ := demo.Cluster()
	slo, _ := time.ParseDuration(os.Getenv("DEMOLP"))
	o := Options{SLO: slo}.withDefaults()
	p, err := prepare(Inputs{Profiles: []*formats.Profile{pr}, Cluster: c}, o)
	if err != nil {
		t.Fatal(err)
	}
	cfg := spaceConfig{P: 3, relax: true}
	ms := p.space(p.models[0], cfg)
	b := p.build([]*modelSpace{ms}, cfg)
	res, err := solver.Solve(context.Background(), b.m, solver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("LP %v %.2f", res.Status, res.Objective)
	for li, tp := range ms.tmpls {
		if res.Values[b.x[0][li]] < 1e-6 {
			continue
		}
		t.Logf("tmpl %v x=%.2f u=%.3f xmax %.1f", tp.types, res.Values[b.x[0][li]], res.Values[b.u[0][li]], tp.xmax)
		for d := range tp.stages {
			for oi, op := range tp.stages[d] {
				if f := res.Values[b.f[0][li][d][oi]]; f > 1e-6 {
					t.Logf("   d%d v%d b%d [%d,%d) y=%.3f f=%.1f g=%.2f X=%.1f C=%.0f Y=%.0f G=%d", d, op.v, op.b, op.i, op.j, res.Values[b.y[0][li][d][oi]], f, res.Values[b.g[0][li][d][oi]], op.X, op.C, op.Y, op.G)
				}
			}
		}
	}
}
