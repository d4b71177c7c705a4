package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
)

func TestHelpPrintedOnceToStdout(t *testing.T) {
	for name := range commands {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), []string{name, "--help"}, &stdout, &stderr); code != 0 {
			t.Errorf("%s --help: exit %d", name, code)
		}
		if n := strings.Count(stdout.String(), "Usage: go run ./ci "+name); n != 1 {
			t.Errorf("%s --help printed the usage %d times on stdout", name, n)
		}
		if stderr.Len() != 0 {
			t.Errorf("%s --help wrote to stderr: %q", name, stderr.String())
		}
	}
}

func TestUnknownFlagIsAUsageError(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"build", "--bogus"}, &stdout, &stderr); code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	if !strings.Contains(stderr.String(), "-bogus") || !strings.Contains(stderr.String(), "build --help") {
		t.Errorf("stderr = %q, want the flag named and a pointer to --help", stderr.String())
	}
}

// checkUsage runs the command line args (what follows "ci") as run does, except that a
// command that judges its flags before any work (command.checked: build, base, pgo-profile)
// stops after that judgement: nothing fetched, built, written or contacted. It returns the
// exit status run would have given for a line that fails there, and prints the same error.
// Any other line runs whole through run.
func checkUsage(args []string, stderr io.Writer) int {
	var c *command
	if len(args) > 0 {
		c = commands[args[0]]
	}
	if c == nil || c.checked == nil {
		return run(context.Background(), args, io.Discard, stderr)
	}
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	check, _ := c.checked(fs)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if err := noArgs(c.name, fs.Args()); err != nil {
		return exitStatus(c, fs, err, stderr)
	}
	return exitStatus(c, fs, check(), stderr)
}
