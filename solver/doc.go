// Package solver is plan's LP/MILP modelling API and its HiGHS backend.
//
// A Model holds variables (columns) with bounds, objective coefficients and
// integrality, and linear rows lb <= sum(coef*var) <= ub. Solve hands the
// model to HiGHS 1.15, which runs as WebAssembly inside the process (see
// solver/internal/highs), and returns a Result with the status, objective,
// best bound, gap, variable values, node count and wall time.
//
// Solve returns a nil error for every outcome HiGHS can report about the
// model itself (optimal, infeasible, unbounded, time limit with or without
// an incumbent) and an error only when no such statement can be made:
// cancellation (ErrCanceled), a crashed solver instance (ErrAborted), a
// missing backend (ErrBackendUnavailable) or an invalid model
// (ErrInvalidModel). Result.Err converts a status into ErrInfeasible,
// ErrUnbounded or ErrNoSolution for callers that want a single error path.
//
// Solves are independent: any number may run concurrently, each in its own
// wasm instance.
package solver
