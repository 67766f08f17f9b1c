// Package autopilot is the control loop that re-plans a served plan as its load moves:
// it observes the admitted requests (per-application arrival rate, mix and tokens
// over sliding windows), forecasts the next windows (Holt's linear trend by default,
// Holt-Winters when a period is given, with the one-step error tracked online), sizes the
// plan for the envelope of the forecast (times a burst factor learnt from how far each
// window's peak tenth rose above its mean: a 14 ms SLO leaves no queue for a one-second
// burst), and decides when that envelope leaves the band the current plan serves within
// its SLO (hysteresis, longer for a fall the burstier the load; a minimum interval between
// switches; a GPU budget) that a re-solve is due and whether its result replaces the plan.
//
// Like the data-plane policies it is pure logic over an injected clock (DESIGN.md "One
// policy, two clocks"; Nomad's scheduler harness): callers hand it the time with every call,
// the solver and the installer are interfaces, and it starts no goroutines. `plan serve`
// runs the re-solve on a goroutine and solver instance of its own and installs through the
// hot-reload path; `plan simulate --autopilot` runs the identical code in virtual time with
// the solver in process. The loop is what Dynamo's SLA planner does for prefill/decode
// workers, with the system's own planner (the MILP of PPipe §3, QLM §7) in place of a
// profiled replica count.
package autopilot
