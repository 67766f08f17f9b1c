package serve

import (
	"fmt"
	"strings"

	"github.com/plan-dev/plan/internal/registry/system"
	"github.com/plan-dev/plan/internal/registry/systems"
	planserve "github.com/plan-dev/plan/serve"
)

// RoutesHelp lists every route a server registers: the core routes, then each system's
// front ends' (a reload may move the server to another system's plan, so all are registered),
// from the tables their registration uses.
func RoutesHelp(reg *systems.Registry) string {
	var b strings.Builder
	b.WriteString("Routes (every plan):\n")
	w := 0
	docs := planserve.CoreRoutes()
	type sysRoutes struct {
		name string
		docs []planserve.RouteDoc
	}
	var per []sysRoutes
	for _, sys := range reg.Systems() {
		sv, ok := sys.(system.Serving)
		if !ok {
			continue
		}
		for _, f := range sv.Frontends() {
			if fr, ok := f.(planserve.FrontendRoutes); ok {
				per = append(per, sysRoutes{sys.Name(), fr.RouteDocs()})
			}
		}
	}
	for _, d := range docs {
		w = max(w, len(d.Pattern))
	}
	for _, p := range per {
		for _, d := range p.docs {
			w = max(w, len(d.Pattern))
		}
	}
	for _, d := range docs {
		fmt.Fprintf(&b, "  %-*s  %s\n", w, d.Pattern, d.Doc)
	}
	for _, p := range per {
		fmt.Fprintf(&b, "Routes of %s plans:\n", p.name)
		for _, d := range p.docs {
			fmt.Fprintf(&b, "  %-*s  %s\n", w, d.Pattern, d.Doc)
		}
	}
	return b.String()
}
