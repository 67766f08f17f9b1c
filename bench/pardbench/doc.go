// Package pardbench is `plan bench pard`: PARD's evaluation (Zhao et al., EuroSys '26, §5)
// in the simulator. It runs single-pipeline applications under PARD, its ablations and the
// baselines on per-second rate series (synthetic stand-ins for the paper's Wikipedia,
// Twitter and Azure Functions traces with their coefficients of variation, §5.4) and on the
// fixed-capacity stress test (Fig. 14), and computes the paper's metrics (§5.1: goodput,
// drop and invalid rates, the share of drops in later modules, the worst windows). The
// pipeline runner and the traces moved here from sim, so the simulator
// keeps nothing PARD-specific.
package pardbench
