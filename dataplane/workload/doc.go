// Package workload holds what a run of a plan is driven by and reported in, shared by the
// simulator (sim) and `plan load` (serve/load) below both of them: the arrival processes
// (Poisson, Gamma-renewal bursts, MMPP, trace replay with the folding scaler, per-interval
// counts), their per-load-point seeding, and the SimulationReport format with its latency
// summary and capacity search. `plan load --load L --seed S` and `plan simulate --load L
// --seed S` thus replay the very same trace and report alike, while serve/load stays free
// of the simulator (DESIGN.md's layering: serve → dataplane).
package workload
