package ppipe_test

import (
	"fmt"
	"path/filepath"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/ppipe"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
)

// A driver by hand: the engine asks for effects, the driver reports what happened. This is
// the whole contract a wall-clock driver implements (with goroutines and timers instead).
func ExampleEngine() {
	plan, err := formats.ReadInto[*formats.Plan](filepath.Join("..", "..", "testdata", "sim", "one-gpu.json"), intree.Sections())
	if err != nil {
		panic(err)
	}
	dep, err := ppipe.FromPlan(plan) // one L4, batch 2: 8 ms at b=1, 10 ms at b=2; SLO 25 ms
	if err != nil {
		panic(err)
	}
	pol, _ := ppipe.NewPolicy(dataplane.Config{Policy: "ppipe"})
	rec := &dataplane.Recorder{}
	eng, err := dataplane.NewEngine(dep, pol, rec)
	if err != nil {
		panic(err)
	}
	eng.Arrive(0, 0, 0)    // waits for a partner: timer
	eng.Arrive(3000, 0, 0) // batch of 2 starts on the GPU
	for _, fx := range rec.Take() {
		fmt.Println(fx)
	}
	// The worker reports: it really took 10.5 ms.
	eng.Handle(13500, dataplane.Event{Kind: dataplane.EvBatchDone, Batch: 0, Worker: 0, Start: 3000, End: 13500})
	for _, fx := range rec.Take() {
		fmt.Println(fx)
	}
	// Output:
	// timer 1 at 15001
	// t=3000 run batch 0 hop 0 (2 reqs) on worker 0 for 10000
	// t=13500 request 0 completed
	// t=13500 request 1 completed
}
