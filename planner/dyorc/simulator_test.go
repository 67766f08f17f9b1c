package dyorc

import "github.com/plan-dev/plan/internal/registry/systems/dyorcsys/dyorcsim"

// testSim is the simulator the registry hands the planner (internal/registry/systems/dyorcsys): the
// tests size plans by the same one, passed as a dependency of each call.
var testSim Simulator = dyorcsim.PredictAtRates
