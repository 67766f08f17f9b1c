package cli

import (
	"github.com/plan-dev/plan/internal/run"
	"github.com/spf13/cobra"
)

func newCompletionCmd(app *App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print a shell completion script",
		Long: `Print a completion script for your shell. Load it in the current shell or install it
where your shell looks for completions.`,
		Example: `  # bash, current shell
  source <(plan completion bash)
  # zsh, permanently
  plan completion zsh > "${fpath[1]}/_plan"
  # fish
  plan completion fish > ~/.config/fish/completions/plan.fish`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"bash", "zsh", "fish", "powershell"},
		RunE: func(cmd *cobra.Command, args []string) error {
			root := cmd.Root()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(app.Out, true)
			case "zsh":
				return root.GenZshCompletion(app.Out)
			case "fish":
				return root.GenFishCompletion(app.Out, true)
			case "powershell":
				return root.GenPowerShellCompletionWithDesc(app.Out)
			}
			return run.UsageErrorf("completion: %q: shell must be bash, zsh, fish or powershell", args[0])
		},
	}
	return cmd
}
