// Package actions is the only user of github.com/sethvargo/go-githubactions. It reports a
// command's results the way GitHub Actions shows them (step outputs, the step summary,
// warning annotations, collapsible log groups, masked secrets) when the command runs there,
// and as plain text everywhere else.
//
// The library panics when it cannot write an environment file and reads the real
// environment by default; this package always hands it a getenv, decides "in Actions" only
// from GITHUB_ACTIONS=true, checks the files exist before using them and turns the library's
// panics into errors, so a command never crashes because of its reporting.
package actions

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/safeio"
	"github.com/sethvargo/go-githubactions"
)

// Reporter writes results for GitHub Actions or for a terminal.
type Reporter struct {
	out    io.Writer
	getenv func(string) string
	gha    *githubactions.Action // nil outside Actions
	// secrets are what Mask was given: every line, annotation, output and summary goes
	// through safeio.Redact with them before it is written (in Actions the runner's masking
	// comes on top).
	secrets []string
}

// redact is the one redaction rule (safeio.Redact) with the secrets the reporter knows.
func (r *Reporter) redact(s string) string { return safeio.Redact(s, r.secrets...) }

// Option configures a Reporter.
type Option func(*Reporter)

// withGetenv sets the environment lookup (default os.Getenv). Tests pass a map's lookup.
func withGetenv(getenv func(string) string) Option { return func(r *Reporter) { r.getenv = getenv } }

// WithWriter sets where plain text and workflow commands go (default os.Stdout: the runner
// reads workflow commands from the step's standard output).
func WithWriter(w io.Writer) Option { return func(r *Reporter) { r.out = w } }

// New returns a Reporter for the environment it finds.
func New(opts ...Option) *Reporter {
	r := &Reporter{out: os.Stdout, getenv: os.Getenv}
	for _, o := range opts {
		o(r)
	}
	if r.getenv("GITHUB_ACTIONS") == "true" {
		r.gha = githubactions.New(githubactions.WithGetenv(r.getenv), githubactions.WithWriter(r.out))
	}
	return r
}

// InActions reports whether the process runs as a GitHub Actions step.
func (r *Reporter) InActions() bool { return r.gha != nil }

// Writer is where the reporter prints (for a command's own plain text).
func (r *Reporter) Writer() io.Writer { return r.out }

// call runs a library call, turning its panic (an unwritable environment file or stream)
// into an error naming what was being done.
func call(what string, f func()) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("GitHub Actions %s: %v", what, p)
		}
	}()
	f()
	return nil
}

// fileDelimiter is the heredoc delimiter go-githubactions uses in GITHUB_OUTPUT; a value
// holding it would end the value early and inject further outputs, so such values are refused.
const fileDelimiter = "_GitHubActionsFileCommandDelimeter_"

func (r *Reporter) envFile(name string) error {
	p := r.getenv(name)
	if p == "" {
		return fmt.Errorf("%s is not set: the runner sets it for every step (running in a container or an old runner?)", name)
	}
	return nil
}

// interrupted is checked before each write of an output or the summary: a run that a
// signal or its deadline ended writes nothing more there, so that a later step never reads
// a half-reported run as a finished one (issue 47). It names what was not written.
func interrupted(ctx context.Context, what string) error {
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted: %s was not written: %w", what, context.Cause(ctx))
	}
	return nil
}

// SetOutputs sets step outputs (keys sorted, so the file is stable). Outside Actions it does
// nothing: the plain-text report carries the same facts. Once ctx is done it writes nothing
// (checked before each output) and says so.
func (r *Reporter) SetOutputs(ctx context.Context, kv map[string]string) error {
	if r.gha == nil {
		return nil
	}
	if err := interrupted(ctx, "the step outputs"); err != nil {
		return err
	}
	if err := r.envFile("GITHUB_OUTPUT"); err != nil {
		return fmt.Errorf("setting outputs: %w", err)
	}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := r.redact(kv[k])
		if strings.Contains(v, fileDelimiter) || strings.ContainsAny(k, "\r\n=<") {
			return fmt.Errorf("setting output %q: the name or value contains a character sequence that would corrupt GITHUB_OUTPUT", k)
		}
		if err := interrupted(ctx, "the step output "+k+" and those after it"); err != nil {
			return err
		}
		if err := call("setting output "+k, func() { r.gha.SetOutput(k, v) }); err != nil {
			return err
		}
	}
	return nil
}

// AddSummary appends markdown to the step summary in Actions; outside it prints text, the
// plain-text form of the same content. Once ctx is done it writes neither and says so.
func (r *Reporter) AddSummary(ctx context.Context, markdown, text string) error {
	markdown, text = r.redact(markdown), r.redact(text)
	if r.gha == nil {
		if err := interrupted(ctx, "the summary"); err != nil {
			return err
		}
		_, err := io.WriteString(r.out, text)
		return err
	}
	if err := interrupted(ctx, "the step summary"); err != nil {
		return err
	}
	if err := r.envFile("GITHUB_STEP_SUMMARY"); err != nil {
		return fmt.Errorf("writing the step summary: %w", err)
	}
	return call("writing the step summary", func() { r.gha.AddStepSummary(markdown) })
}

// Warningf emits a warning annotation in Actions, a "warning: " line elsewhere.
func (r *Reporter) Warningf(format string, args ...any) {
	r.annotate("warning", func(a *githubactions.Action, msg string) { a.Warningf("%s", msg) }, format, args)
}

// Errorf emits an error annotation in Actions, an "error: " line elsewhere.
func (r *Reporter) Errorf(format string, args ...any) {
	r.annotate("error", func(a *githubactions.Action, msg string) { a.Errorf("%s", msg) }, format, args)
}

// annotate emits the redacted message as an annotation of level ("warning", "error") through
// emit in Actions, as a "level: " line elsewhere.
func (r *Reporter) annotate(level string, emit func(a *githubactions.Action, msg string), format string, args []any) {
	msg := r.redact(fmt.Sprintf(format, args...))
	if r.gha == nil {
		fmt.Fprintf(r.out, "%s: %s\n", level, msg)
		return
	}
	_ = call(level, func() { emit(r.gha, msg) })
}

// Group runs f with its log lines folded under title in Actions (a heading elsewhere). The
// group is closed even when f fails.
func (r *Reporter) Group(title string, f func() error) error {
	title = r.redact(title)
	if r.gha == nil {
		fmt.Fprintf(r.out, "== %s\n", title)
		return f()
	}
	_ = call("group", func() { r.gha.Group(title) })
	defer func() { _ = call("endgroup", r.gha.EndGroup) }()
	return f()
}

// Mask redacts secret from everything the reporter writes from now on, and in Actions also
// asks the runner to hide it in every later log line (what a step prints past the reporter).
// Empty and very short values are ignored (masking "1" would blank every digit of the log).
func (r *Reporter) Mask(secret string) {
	if len(strings.TrimSpace(secret)) < 4 || slices.Contains(r.secrets, secret) {
		return
	}
	r.secrets = append(r.secrets, secret)
	if r.gha == nil {
		return
	}
	// The runner masks line by line, so a multi-line secret is masked one line at a time.
	for _, line := range strings.Split(secret, "\n") {
		line = strings.TrimRight(line, "\r")
		if len(strings.TrimSpace(line)) < 4 {
			continue
		}
		_ = call("add-mask", func() { r.gha.AddMask(line) })
	}
}
