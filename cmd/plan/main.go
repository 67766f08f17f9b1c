// Command plan plans, simulates, serves and checks ML inference deployments under latency
// SLOs. All logic lives in packages; main only hands the process's streams to the CLI.
package main

import (
	"os"

	"github.com/plan-dev/plan/cmd/plan/internal/cli"
)

func main() {
	os.Exit(cli.Run(os.Args[1:], cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}
