// Package pard implements PARD (Zhao et al., EuroSys '26) and the baselines it is compared
// with, as one pipeline executor with pluggable queue order and drop rule: policies differ only in queue order and
// drop test, so batching, scaling and dispatch stay identical (isolation as in PARD §5.3).
// Every module re-batches: each worker holds a double-ended priority queue, forms the next
// batch while the current one runs, and launches it the moment the GPU is free
// (work-conserving). The drop decision is taken at t_b, when the broker takes a request from
// the queue to put it into the forming batch.
//
// The state planner runs on the engine's 1 s tick and publishes a snapshot (windowed queueing
// delay, batch-wait quantile, load factor and priority mode, budgets); workers use the
// snapshot until the next tick, so the simulator sees the same staleness a distributed
// deployment would (1 s sync, PARD §5.4); reading live downstream state would flatter PARD.
// Only t_e and d_k are live.
package pard
