// Package ppipe plans pooled-pipeline inference serving on heterogeneous GPU clusters
// (PPipe, USENIX ATC 2025; spec ../../../shared/specs/ppipe.md §2–§3): it prunes the option
// space, builds the corrected A.2 MILP, solves it with the solver package (HiGHS), decodes and
// post-processes the solution into a formats.Plan, and implements the NP and DART-r baselines.
// Verify checks a plan's constraints independently of the solver (used by `plan check`).
//
// Units inside the formulation: latencies in µs (latency rows in ms for conditioning),
// throughput in requests/s, GPU budget rows in twelfths of a GPU (12 = lcm of levels 1..4) so
// every coefficient is an integer.
package ppipe
