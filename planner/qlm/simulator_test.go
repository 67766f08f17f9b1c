package qlm

import "github.com/plan-dev/plan/sim"

// The planner's tests size by the same simulator the registry installs (qlmsys).
func init() { SetSimulator(sim.PoissonPoint) }
