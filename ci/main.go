// Command ci is nginx-forge's command line: it parses flags, wires the pipeline packages
// together and maps failures to exit codes. Recipe logic lives in pipeline/, not here.
//
// Each subcommand lives in its own file and registers itself in init.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/nginx-forge/nginx-forge/pipeline/forge"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/safeio"
)

// command is one subcommand: `go run ./ci NAME [flags]`.
type command struct {
	name    string
	summary string // one line, shown in the command list
	usage   string // the argument synopsis after the name, e.g. "[flags]"
	long    string // paragraphs shown by NAME --help, before the flags
	// flags declares the subcommand's flags on fs and returns the function that runs it.
	flags func(fs *flag.FlagSet) runFunc
	// checked is flags for a command that takes no arguments and judges its flags before any
	// work (build, base, pgo-profile): it returns that judgement (check: nothing fetched,
	// built, written or contacted; exit status 0 or 2) apart from the work, which makes it
	// again first. The tests run the README's command lines through check alone.
	checked func(fs *flag.FlagSet) (check func() error, work func(ctx context.Context, stdout, stderr io.Writer) error)
}

// runFunc runs a subcommand with its arguments. It writes only to the stdout and stderr it
// is given, so commands can run side by side in tests.
type runFunc func(ctx context.Context, args []string, stdout, stderr io.Writer) error

var commands = map[string]*command{}

func register(c *command) {
	if _, dup := commands[c.name]; dup {
		panic("ci: command registered twice: " + c.name)
	}
	commands[c.name] = c
}

// errUsage marks an error caused by how the command was called (exit code 2).
var errUsage = errors.New("usage")

// exitError asks for a particular exit status (a command documents its own, like
// check-updates' "partial").
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// isUsage: err is fixed by how the command is called (exit status 2): a usage error of the
// command, a request the build pipeline refused before running (forge.RequestError), or a
// build the engine cannot run here as asked (forge.PreflightError: a flag or an install
// fixes it).
func isUsage(err error) bool {
	return errors.Is(err, errUsage) || errors.As(err, new(*forge.RequestError)) || errors.As(err, new(*forge.PreflightError))
}

func usageErrorf(format string, a ...any) error {
	return keepCauses(fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, a...)), a)
}

// main maps SIGINT and SIGTERM to a cancelled context: the command stops its work and cleans
// up (the host engine kills its compilers and removes its scratch directories, temporary
// trees and downloads are removed) and then exits 128+signal, 130 or 143, as a shell
// reports an interrupted command. A second signal stops the program at once.
func main() {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	var got atomic.Int32
	go func() {
		s := (<-sigs).(syscall.Signal)
		got.Store(int32(s))
		// The default action again: a second signal ends the process without cleaning up.
		signal.Reset(os.Interrupt, syscall.SIGTERM)
		fmt.Fprintf(os.Stderr, "ci: %s: stopping and cleaning up (send it again to stop at once)\n", signalName(s))
		cancel()
	}()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if s := got.Load(); s != 0 {
		code = 128 + int(s)
	}
	os.Exit(code)
}

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printCommands(stdout)
		return 0
	}
	switch args[0] {
	case "-h", "-help", "--help":
		printCommands(stdout)
		return 0
	case "-version", "--version", "version":
		bi, ok := debug.ReadBuildInfo()
		printVersion(stdout, bi, ok, lock.Default())
		return 0
	case "help":
		// `ci help build` is `ci build --help`: how people type it after git and go.
		switch len(args) {
		case 1:
			printCommands(stdout)
			return 0
		case 2:
			if _, ok := commands[args[1]]; ok {
				return run(ctx, []string{args[1], "--help"}, stdout, stderr)
			}
			fmt.Fprintf(stderr, "ci help: unknown command %q\n\n", args[1])
		default:
			fmt.Fprintf(stderr, "ci help: one command at a time, e.g. 'go run ./ci help build'\n\n")
		}
		printCommands(stderr)
		return 2
	}
	c, ok := commands[args[0]]
	if !ok {
		if strings.HasPrefix(args[0], "-") {
			fmt.Fprintf(stderr, "ci: %s before a command: flags follow the command (go run ./ci COMMAND [flags])\n\n", args[0])
		} else {
			fmt.Fprintf(stderr, "ci: unknown command %q\n\n", args[0])
		}
		printCommands(stderr)
		return 2
	}
	fs, runFn, err := parseFlags(c, args[1:], stderr)
	usage := func(out io.Writer) {
		fmt.Fprintf(out, "Usage: go run ./ci %s %s\n\n", c.name, c.usage)
		if c.long != "" {
			fmt.Fprintln(out, strings.TrimSpace(c.long))
			fmt.Fprintln(out)
		}
		fmt.Fprintln(out, "Flags:")
		fs.SetOutput(out)
		fs.PrintDefaults()
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout)
			return 0
		}
		fmt.Fprintf(stderr, "Run 'go run ./ci %s --help' for its flags.\n", c.name)
		return 2
	}
	return exitStatus(c, fs, runFn(ctx, fs.Args(), stdout, stderr), stderr)
}

// exitStatus prints err, if any, as c's failure and returns the exit status it means: 2 for a
// usage error, an exitError's own, 1 for any other.
func exitStatus(c *command, fs *flag.FlagSet, err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	err, badInput := inputFlagError(fs, err)
	// The one redaction rule: a server may have echoed a credential into the error.
	fmt.Fprintf(stderr, "ci %s: %s\n", c.name, safeio.Redact(err.Error(), knownSecrets(fs)...))
	var ee *exitError
	switch {
	case badInput, isUsage(err):
		return 2
	case errors.As(err, &ee):
		return ee.code
	}
	return 1
}

// parseFlags declares c's flags and parses args (what follows the command's name) as
// `go run ./ci NAME ...` does, printing a parse error to stderr; it returns the flag set and
// the function that runs the command with fs.Args(). flag.ErrHelp means -h or --help.
func parseFlags(c *command, args []string, stderr io.Writer) (*flag.FlagSet, runFunc, error) {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	runFn := c.declare(fs)
	// flag prints a parse error itself, then calls Usage: keep that short (run prints the
	// whole usage once, to standard output, when it was asked for).
	fs.Usage = func() {}
	return fs, runFn, fs.Parse(args)
}

// declare declares c's flags on fs and returns the function that runs it.
func (c *command) declare(fs *flag.FlagSet) runFunc {
	if c.checked == nil {
		return c.flags(fs)
	}
	_, work := c.checked(fs)
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if err := noArgs(c.name, args); err != nil {
			return err
		}
		return work(ctx, stdout, stderr)
	}
}

// noArgs refuses arguments to the command cmd, which takes none.
func noArgs(cmd string, args []string) error {
	if len(args) > 0 {
		return usageErrorf("%s takes no arguments, got %q", cmd, args)
	}
	return nil
}

func printCommands(w io.Writer) {
	fmt.Fprintln(w, "nginx-forge builds, tests, benchmarks and publishes a hardened nginx image.")
	fmt.Fprintln(w, "\nUsage: go run ./ci COMMAND [flags]\n\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-14s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'go run ./ci help COMMAND' (or COMMAND --help) for a command's flags, and")
	fmt.Fprintln(w, "'go run ./ci --version' for the program's version, commit and built-in lock.")
}
