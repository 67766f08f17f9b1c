package ppipe

import (
	"os"
)

func init() {
	if os.Getenv("PPIPE_SOLVER_LOG") != "" {
		solverLog = os.Stderr
	}
}
