// Command floor is the HTTP floor `plan serve` is measured against (bench/RESULTS.md): a
// trivial Go net/http server that speaks just enough of plan serve's API for `plan load` to
// drive it (load.FloorHandler: GET /v1/plan, GET /v2/models/{model}, and an infer endpoint
// that waits the plan's single-request latency of the model and answers a fixed 200). No
// decoding, no engine, no batching, no admission, unbounded concurrency: what any Go HTTP
// server costs on the same machine. `plan bench speed` runs the same handler in-process.
//
//	go run ./serve/load/floor --plan testdata/serve/wide.json --addr 127.0.0.1:18081
package main

import (
	"flag"
	"log"
	"net/http"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
	"github.com/plan-dev/plan/serve/load"
)

func main() {
	planPath := flag.String("plan", "plan.json", "the plan whose models and latencies to mimic")
	addr := flag.String("addr", "127.0.0.1:18081", "listen address")
	flag.Parse()
	raw, err := formats.ReadBytes(*planPath)
	if err != nil {
		log.Fatal(err)
	}
	// The floor mimics PPipe plans only (FloorHandler refuses any other), so it reads them
	// with PPipe's sections: this tool sits below the system registry and takes no other
	// system's plan.
	ppipe := &formats.SectionSet{Systems: []string{"ppipe"},
		Plan: []formats.Section{ppipesec.PlanSection}, Workload: []formats.Section{ppipesec.WorkloadSection}}
	h, err := load.FloorHandler(*planPath, raw, ppipe)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("floor: serving %s on http://%s", *planPath, *addr)
	log.Fatal((&http.Server{Addr: *addr, Handler: h, ReadHeaderTimeout: 5 * time.Second}).ListenAndServe())
}
