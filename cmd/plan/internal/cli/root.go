// Package cli implements plan's cobra commands. Each command lives in its own file with its
// help text, examples and an options struct; commands.go lists them all, in help order.
// The whole CLI runs in-process through Run, which is what the tests call.
package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/plan-dev/plan/internal/registry/systems"
	"github.com/plan-dev/plan/internal/run"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/plan-dev/plan/formats"
)

// Exit codes of the contract in DESIGN.md (run's).
const (
	ExitOK      = run.ExitOK
	ExitFailure = run.ExitFailure
	ExitUsage   = run.ExitUsage
)

// Streams are the process's standard streams, injected so tests need no terminal.
type Streams = run.Streams

// App is what every command receives: the IO a command's work writes through (streams,
// resolved global options, the logger), the config and the system registry.
type App struct {
	run.IO
	// Viper holds the config file and PLAN_* environment.
	Viper *viper.Viper
	// Systems is the system registry every command looks systems up in (Options.Systems).
	Systems *systems.Registry

	configFile string
	logLevel   string
	// followLinks is --follow-links (formats.FollowLinksOut), set for each run.
	followLinks bool
}

// ExitError carries an exit code with the error that caused it.
type ExitError = run.ExitError

// Options are what the CLI is built from beyond its streams.
type Options struct {
	// Systems is the system registry (nil: the in-tree systems, systems.Default). A test
	// passes one with a toy system added; no command names a system itself.
	Systems *systems.Registry
}

// NewRoot builds the command tree on the given streams, for the in-tree systems.
func NewRoot(s Streams) (*cobra.Command, *App) { return NewRootWith(s, Options{}) }

// NewRootWith builds the command tree on the given streams for the systems of o.
func NewRootWith(s Streams, o Options) (*cobra.Command, *App) {
	if o.Systems == nil {
		o.Systems = systems.Default()
	}
	app := &App{IO: run.IO{Streams: s}, Viper: viper.New(), Systems: o.Systems}
	root := &cobra.Command{
		Use:   "plan",
		Short: "Plan, simulate, serve and check ML inference under latency SLOs",
		Long: `plan profiles models, solves for an optimal serving plan on a mixed GPU fleet
(PPipe, CascadeServe, QLM, PARD, DyOrc), simulates it at scale, serves it, and checks
plans for regressions in CI.

Settings come from flags, then PLAN_* environment variables (PLAN_SLO=200ms for --slo),
then the YAML file given by --config (top-level keys, or keys under the command name).
PLAN_CPUPROFILE=FILE writes a Go CPU profile of the whole run to FILE (go tool pprof).

Systems (from the registry; plan systems -O json for the same as JSON):

` + strings.TrimRight(systemsTable(o.Systems), "\n"),
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			boundMemory(cmd.Name(), args)
			if err := app.setup(cmd); err != nil {
				return err
			}
			formats.FollowLinksOut(app.followLinks)
			return finiteFlags(cmd.Flags())
		},
	}
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	pf := root.PersistentFlags()
	pf.StringVar(&app.configFile, "config", "", "YAML config file with defaults for any flag (env PLAN_CONFIG)")
	pf.StringVarP(&app.Output, "output", "O", "table", "output format: table or json")
	pf.StringVar(&app.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	pf.BoolVarP(&app.Quiet, "quiet", "q", false, "print only results and errors (no progress, no info logs)")
	pf.BoolVar(&app.followLinks, "follow-links", false, "read input files that are symbolic links out of their directory (refused by default)")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return run.UsageError(err) })

	for _, newCmd := range commands {
		root.AddCommand(newCmd(app))
	}
	return root, app
}

// Run executes the CLI with args and returns the process exit code. Errors are printed once,
// to stderr, prefixed with "plan: ".
func Run(args []string, s Streams) int { return RunWith(args, s, Options{}) }

// RunWith is Run for the systems of o.
func RunWith(args []string, s Streams, o Options) int {
	root, _ := NewRootWith(s, o)
	root.SetArgs(args)
	// SIGINT and SIGTERM cancel the context every long operation watches (reads of standard
	// input, solves, simulations, serving); once one came, the default disposition is back, so
	// a second signal ends the process at once whatever it is doing.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	var got atomic.Value // the first signal, which decides the exit status
	go func() {
		select {
		case sig := <-sigs:
			got.Store(sig)
			signal.Stop(sigs)
			cancel()
		case <-ctx.Done():
		}
	}()
	if path := os.Getenv(cpuProfileEnv); path != "" {
		stopProfile, err := startCPUProfile(path)
		if err != nil {
			fmt.Fprintf(s.Err, "plan: %s: %v\n", cpuProfileEnv, err)
			return ExitUsage
		}
		defer stopProfile()
	}
	err := root.ExecuteContext(ctx)
	if sig, ok := got.Load().(syscall.Signal); ok {
		// Interrupted: the shell's convention, 128 + the signal's number (130 for SIGINT,
		// 143 for SIGTERM), whatever the command returned; its error once, if any.
		switch {
		case err != nil && (errors.Is(err, context.Canceled) || strings.Contains(err.Error(), context.Canceled.Error())) && !strings.Contains(err.Error(), "interrupt"):
			fmt.Fprintf(s.Err, "plan: interrupted (%s)\n", map[syscall.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM"}[sig])
		case err != nil:
			fmt.Fprintf(s.Err, "plan: %s\n", interruptLine(err))
		}
		return 128 + int(sig)
	}
	if err == nil {
		return ExitOK
	}
	code := ExitUsage
	var ee *ExitError
	if errors.As(err, &ee) {
		code = ee.Code
	} else if !isCobraUsage(err) {
		code = ExitFailure
	}
	msg := strings.TrimRight(err.Error(), "\n")
	for _, line := range strings.Split(msg, "\n") {
		fmt.Fprintf(s.Err, "plan: %s\n", line)
	}
	return code
}

// interruptLine is err's message up to its first line break: an interrupted command's error is
// the interruption, once.
func interruptLine(err error) string {
	m, _, _ := strings.Cut(strings.TrimRight(err.Error(), "\n"), "\n")
	return m
}

// cpuProfileEnv names the file a CPU profile of the run goes to: where a command spends its
// time on a user's machine (a server at its limit, a slow solve) without rebuilding plan.
const cpuProfileEnv = "PLAN_CPUPROFILE"

// startCPUProfile profiles the process into a new file at path (an existing file is not
// overwritten); the returned function stops the profile and closes the file.
func startCPUProfile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// isCobraUsage recognizes cobra's own argument and command errors, which are usage errors.
func isCobraUsage(err error) bool {
	m := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "accepts ", "requires at least", "requires at most", "invalid argument", "flag needs an argument", "required flag"} {
		if strings.Contains(m, p) {
			return true
		}
	}
	return false
}

// MaxConfigBytes bounds a --config file (PLAN_CONFIG): a config file sets a few flags.
const MaxConfigBytes = 1 << 20

// setup resolves flags > PLAN_* environment > config file, then validates global options.
func (a *App) setup(cmd *cobra.Command) error {
	if a.configFile == "" {
		a.configFile = os.Getenv("PLAN_CONFIG")
	}
	a.Viper.SetEnvPrefix("PLAN")
	a.Viper.SetEnvKeyReplacer(strings.NewReplacer("-", "_", ".", "_"))
	a.Viper.AutomaticEnv()
	if a.configFile != "" {
		a.Viper.SetConfigType("yaml")
		// The one guarded reader of every file-taking flag: viper's own
		// ReadInConfig opens anything, so a FIFO blocked forever and /dev/zero grew unbounded.
		data, err := formats.ReadBytesLimit(a.configFile, MaxConfigBytes)
		if err == nil {
			err = a.Viper.ReadConfig(bytes.NewReader(data))
		}
		if err != nil {
			// The path is already in the message.
			return run.UsageErrorf("--config %s: %s", a.configFile, strings.TrimPrefix(err.Error(), a.configFile+": "))
		}
		if err := checkConfigKeys(cmd.Root(), a.Viper.AllSettings(), a.configFile); err != nil {
			return err
		}
	}
	var firstErr error
	apply := func(f *pflag.Flag) {
		if f.Changed || firstErr != nil || f.Name == "config" || f.Name == "help" {
			return
		}
		val, source, ok := a.lookup(cmd.Name(), f.Name)
		if !ok {
			return
		}
		if err := f.Value.Set(val); err != nil {
			firstErr = run.UsageErrorf("%s: %q: invalid value for --%s: %v", source, val, f.Name, err)
			return
		}
		f.Changed = true
	}
	cmd.Flags().VisitAll(apply)
	cmd.InheritedFlags().VisitAll(apply)
	if firstErr != nil {
		return firstErr
	}
	if a.Output != "table" && a.Output != "json" {
		return run.UsageErrorf("--output: %q: must be table or json", a.Output)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(a.logLevel)); err != nil {
		return run.UsageErrorf("--log-level: %q: must be debug, info, warn or error", a.logLevel)
	}
	if a.Quiet && level < slog.LevelWarn {
		level = slog.LevelWarn
	}
	a.Log = slog.New(slog.NewTextHandler(a.Err, &slog.HandlerOptions{Level: level}))
	return nil
}

// checkConfigKeys refuses a config file that is not one: a plan file (it has a kind), or keys
// that set nothing — a top-level key must be a flag of some command or a section named after
// a command, and a key in a section a flag of that command. Every unknown key is reported.
func checkConfigKeys(root *cobra.Command, settings map[string]any, file string) error {
	if kind, ok := settings["kind"]; ok {
		return run.UsageErrorf("--config %s: kind: %q: a %v file, not a config file (a config file sets flags: `slo: 200ms`, or `solve:` then `  slo: 200ms`)", file, fmt.Sprint(kind), kind)
	}
	if v, ok := settings["apiversion"]; ok {
		return run.UsageErrorf("--config %s: apiVersion: %q: a plan file, not a config file (a config file sets flags: `slo: 200ms`)", file, fmt.Sprint(v))
	}
	anyFlag := map[string]bool{}
	byCommand := map[string]map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		fl := byCommand[c.Name()]
		if fl == nil {
			fl = map[string]bool{}
			byCommand[c.Name()] = fl
		}
		add := func(f *pflag.Flag) { fl[f.Name], anyFlag[f.Name] = true, true }
		c.Flags().VisitAll(add)
		c.InheritedFlags().VisitAll(add)
		c.PersistentFlags().VisitAll(add)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	delete(byCommand, root.Name())
	var problems []string
	for _, k := range sortedKeys(settings) {
		section, isSection := settings[k].(map[string]any)
		switch flags, isCommand := byCommand[k]; {
		case isCommand && isSection:
			for _, sk := range sortedKeys(section) {
				if !flags[sk] {
					problems = append(problems, fmt.Sprintf("--config %s: %s.%s: unknown key: %s has no flag --%s", file, k, sk, k, sk))
				}
			}
		case anyFlag[k]:
		case isCommand:
			problems = append(problems, fmt.Sprintf("--config %s: %s: must be a section of %s's flags (FLAG: VALUE under %s:)", file, k, k, k))
		default:
			problems = append(problems, fmt.Sprintf("--config %s: %s: unknown key: not a flag of any command nor a command's section", file, k))
		}
	}
	if len(problems) > 0 {
		return run.UsageError(errors.New(strings.Join(problems, "\n")))
	}
	return nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// lookup finds a value for a flag in the environment (PLAN_FLAG_NAME) or the config file
// (key "command.flag" first, then "flag"), and names where it came from for error messages.
func (a *App) lookup(command, flag string) (value, source string, ok bool) {
	env := "PLAN_" + strings.ToUpper(strings.NewReplacer("-", "_").Replace(flag))
	if v, ok := os.LookupEnv(env); ok {
		return v, "environment " + env, true
	}
	for _, key := range []string{command + "." + flag, flag} {
		if a.Viper.InConfig(key) {
			v := a.Viper.Get(key)
			switch x := v.(type) {
			case []any:
				parts := make([]string, len(x))
				for i, p := range x {
					parts[i] = fmt.Sprint(p)
				}
				return strings.Join(parts, ","), a.configFile + ": " + key, true
			default:
				return fmt.Sprint(x), a.configFile + ": " + key, true
			}
		}
	}
	return "", "", false
}
