package cli

import "github.com/spf13/cobra"

// commandFactory builds one top-level command on the App every command shares.
type commandFactory func(*App) *cobra.Command

// commands is plan's command tree, in the order help lists it (alphabetical, as cobra
// would sort it). Listing every command here, rather than having each file register
// itself from init, makes the tree visible in one place and its order independent of
// file names and link order; a new command is one line here.
var commands = []commandFactory{
	newBenchCmd,
	newCheckCmd,
	newCompletionCmd,
	newExportCmd,
	newFrontierCmd,
	newImportCmd,
	newLoadCmd,
	newProfileCmd,
	newServeCmd,
	newSimulateCmd,
	newSolveCmd,
	newSystemsCmd,
	newValidateCmd,
	newVersionCmd,
	newWorkloadCmd,
}
