// Package solver is plan's LP/MILP modelling API and its HiGHS backend.
//
// A Model holds variables (columns) with bounds, objective coefficients and
// integrality, and linear rows lb <= sum(coef*var) <= ub. Solve hands the
// model to HiGHS 1.15 and returns a Result with the status, objective, best
// bound, gap, variable values, node count and wall time.
//
// # Engines
//
// HiGHS is the WebAssembly build of the npm package highs@1.15.3, run in the
// process by one of two engines (see solver/internal/highs):
//
//   - native: the wasm translated to C by wasm2c at build time (`make
//     native`, Debian package wabt) and linked with cgo under the build tag
//     highs_native. It needs no compilation at run time (a first solve
//     starts in milliseconds instead of the seconds wazero needs to compile
//     or load its cache) and solves in 1.4-2x less CPU time.
//   - wazero: the wasm in the pure-Go runtime wazero, always available where
//     highs.wasm is (`make assets`).
//
// Solve uses the native engine where the binary was built with it, else
// wazero. PLAN_SOLVER_ENGINE=native|wazero picks one explicitly; asking for
// native in a binary without it is an error (ErrBackendUnavailable), not a
// silent fallback. Both engines run the same HiGHS build and return the
// same results, bit for bit; Engine tells which one is in use.
//
// # Races
//
// A MIP may be solved by several HiGHS instances in parallel with different
// seeds and heuristic settings, the first to prove the gap winning
// (Options.Race). By default a MIP without a time limit or with one of at
// least RaceMinTimeLimit races on up to four cores once it has run for
// RaceDelay alone. Options.Deterministic turns racing off for results that
// do not depend on timing.
//
// # Errors
//
// Solve returns a nil error for every outcome HiGHS can report about the
// model itself (optimal, infeasible, unbounded, time limit with or without
// an incumbent) and an error only when no such statement can be made:
// cancellation (ErrCanceled), a crashed solver instance (ErrAborted), a
// missing backend (ErrBackendUnavailable), an invalid model
// (ErrInvalidModel), or a PLAN_WRITE_LP directory it cannot write to.
// Result.Err converts a status into ErrModelInfeasible, ErrUnbounded or
// ErrNoFeasibleSolution for callers that want a single error path.
//
// # Exporting models
//
// With PLAN_WRITE_LP=DIR in the environment, every Solve first writes its
// model in LP format (Model.WriteLP) to DIR/NAME-HASH.lp, whatever command
// or flags led to it: NAME is the model's name made file-safe and HASH the
// first 16 hex digits of the sha256 of the file, so a model always gets
// the same name, is written once however often it is solved, and different
// models do not overwrite each other. Use it to run plan's models in
// another solver (e.g. `highs DIR/x.lp`, or any solver that reads CPLEX LP
// files). Options such as the time limit, the gap and a MIP start are not
// part of the file.
//
// Solves are independent: any number may run concurrently, each in its own
// instance.
package solver
