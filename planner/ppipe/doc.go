// Package ppipe plans pooled-pipeline inference serving on heterogeneous GPU clusters
// (PPipe, USENIX ATC 2025, §3, §5.3, A.2): it prunes the option
// space, builds the corrected A.2 MILP, solves it with the solver package (HiGHS), decodes and
// post-processes the solution into a formats.Plan, and implements the NP and DART-r baselines.
// Verify checks a plan's constraints independently of the solver (used by `plan check`).
//
// Formulation (milp.go), per model m, template l (a GPU-type sequence of length ≤ P) and
// stage d: binaries y per option ω = (v, b, i, j), continuous throughput f per option, one
// integer slice count g per (l, d, v), binary u and throughput x per template. Beyond the
// paper's rows (A.2, Eqs. 16–28) it adds, all valid for every integer solution:
//   - throughput conservation Σ_{ω ends at (c,b)} f = Σ_{ω' starts at (c,b)} f, so the LP
//     relaxation routes throughput along contiguous chains instead of skipping blocks
//     (root bound 1294 → 276 against an optimum of 274 on a small case);
//   - Σ_{ω at level v} f_ω/X_ω ≤ g_v ≤ Σ G_ω·y_ω with G_ω = min(v·N, ⌈xmax_l/X_ω⌉) instead
//     of big-M v·N, xmax_l from the budget of every GPU type the template uses;
//   - the latency row weighted by throughput, Σ lat_ω·f_ω ≤ T'·x;
//   - x[l,r] ≥ x[l,r+1], u[l,r] ≥ u[l,r+1] between replicas of a type sequence.
//
// Pruning (options.go) keeps an option only if the shortest same-batch chain through it fits
// T' and no option of the same (l, d, b, i, j) with a multiple level v' has C' ≤ C and
// v'·X' ≥ v·X (typically 85–90% of the raw options go).
//
// Solving (phases.go): NP first (warm start); on a space of more than 20 thousand options a
// plan from its coarse grid of cuts (coarse.go); then the LP relaxation (a global bound), then
// the MILP restricted to the templates and batches the LP uses; only if that leaves a gap
// above the target does HiGHS get the full MILP, warm-started from the best plan so far.
//
// Surplus (surplus.go, Options.FillSurplus): after any strategy, the GPUs the plan leaves idle
// are handed to the model with the lowest capacity/target ratio, step by step (grow one of its
// pipelines or open a one-stage whole-model pipeline, the most capacity per GPU first), until
// no step fits; target_rps keeps the MILP's guaranteed rate.
//
// Batch filling (formation.go, Options.BatchAllowance): without a workload rate, λ̂ of
// β = ρ·(b−1)/λ̂ is the NP first pass's estimate, each model's most throughput over the NP
// optima (lambda.go: not one optimum's tie-break). Where λ̂ is an estimate (that, or
// --arrival-rate) and the plan gives a model less, a batch that its own
// arrivals cannot fill within the SLO (C + Y + (b−1)/x > T) sends λ̂ down to x and the
// solve runs again, so a written batch fills at the plan's own rate.
//
// Stating (served.go): the MILP's throughput is a capacity; a written plan states as each
// model's throughput_rps what its own prediction serves within the SLO (StateServed, which
// plan solve applies and Verify holds a plan with a prediction to), provenance.objective
// keeping the formulation's objective. A plan written before that states its capacity:
// Verify accepts it and StatesCapacity names its models (a warning, and a plan check failure).
//
// Time (solve.go): Options.Reserve leaves the caller's prediction its time within
// TimeLimit, and a HiGHS call past its deadline is stopped, keeping the incumbent. The
// reserve is an estimate; the prediction's headroom search, whose cost varies most between
// plans, ends by the command's deadline itself (sim.Prediction.CompleteBy), and a plan whose
// search stopped states the rate it established (ServedRPS).
//
// Units inside the formulation: latencies in µs (latency rows in ms for conditioning),
// throughput in requests/s, GPU budget rows in twelfths of a GPU (12 = lcm of levels 1..4) so
// every coefficient is an integer.
package ppipe
