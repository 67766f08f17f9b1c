package sim

import (
	"fmt"
	"strings"
	"time"

	"github.com/plan-dev/plan/dataplane"
)

// Failure is one injected worker failure: Worker goes down at At and comes back, empty, at
// Until (0 = stays down). Times count from the start of the run.
type Failure struct {
	Worker    dataplane.WorkerID
	At, Until dataplane.Time
}

// ParseFailure reads a failure written WORKER@AT or WORKER@AT-UNTIL (durations such as 30s,
// 1m30s; WORKER is a worker's name in dep, e.g. a QLM instance's).
func ParseFailure(spec string, dep *dataplane.Deployment) (Failure, error) {
	// The last '@': worker names may hold one (CascadeServe's "model@gpu[0]"), times never.
	i := strings.LastIndexByte(spec, '@')
	if i < 0 || i == 0 || i == len(spec)-1 {
		return Failure{}, fmt.Errorf("%q: want WORKER@AT or WORKER@AT-UNTIL (e.g. i0@30s-90s)", spec)
	}
	name, when := spec[:i], spec[i+1:]
	w := dataplane.WorkerID(-1)
	var names []string
	for i, wk := range dep.Topo.Workers {
		if wk.Name == name {
			w = dataplane.WorkerID(i)
		}
		if len(names) < 8 {
			names = append(names, wk.Name)
		}
	}
	if w < 0 {
		more := ""
		if len(dep.Topo.Workers) > len(names) {
			more = fmt.Sprintf(", … (%d workers)", len(dep.Topo.Workers))
		}
		return Failure{}, fmt.Errorf("%q: no worker %q in the plan; workers are %s%s", spec, name, strings.Join(names, ", "), more)
	}
	at, until, hasUntil := strings.Cut(when, "-")
	f := Failure{Worker: w}
	d, err := time.ParseDuration(at)
	if err != nil || d < 0 {
		return Failure{}, fmt.Errorf("%q: failure time %q: want a duration ≥ 0 such as 30s", spec, at)
	}
	f.At = dataplane.Time(d / time.Microsecond)
	if hasUntil {
		u, err := time.ParseDuration(until)
		if err != nil || u <= d {
			return Failure{}, fmt.Errorf("%q: recovery time %q: want a duration after the failure's %s", spec, until, at)
		}
		f.Until = dataplane.Time(u / time.Microsecond)
	}
	return f, nil
}
