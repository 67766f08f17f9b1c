package dyorc

import "github.com/plan-dev/plan/internal/systems/dyorcsys/dyorcsim"

// The tests size plans by the simulator the registry installs (internal/systems/dyorcsys).
func init() { SetSimulator(dyorcsim.PredictAtRates) }
