package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/forge"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
)

// lineHandler renders the library's records for a person: one plain line each (Debug only
// with -v), and a build's step events (forge.MsgStepStarted, forge.MsgStepDone) as
// "STEP: started" and "STEP: done in D[, from cache]" lines; in GitHub Actions each top-level
// step's lines are one collapsible group (::group::/::endgroup::, which do not nest).
type lineHandler struct {
	mu     *sync.Mutex
	w      io.Writer
	level  slog.Level
	groups bool
	depth  *int
}

// newLog is the logger a command gives the library, and a function that closes a group left
// open by a step that failed before its end.
func newLog(w io.Writer, verbose, groups bool) (*slog.Logger, func()) {
	// The run's credentials (GITHUB_TOKEN, the Docker config's) are redacted from every line,
	// whatever the library put into the record.
	secrets := append([]string{os.Getenv("GITHUB_TOKEN")}, dockerConfigSecrets()...)
	h := &lineHandler{mu: &sync.Mutex{}, w: redactingWriter{w, secrets}, level: slog.LevelInfo, groups: groups, depth: new(int)}
	if verbose {
		h.level = slog.LevelDebug
	}
	return slog.New(h), h.closeGroups
}

func (h *lineHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }
func (h *lineHandler) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h *lineHandler) WithGroup(string) slog.Handler                { return h }

func (h *lineHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	attrs := map[string]slog.Value{}
	r.Attrs(func(a slog.Attr) bool {
		attrs[a.Key] = a.Value
		return true
	})
	step := attrs[forge.AttrStep].String()
	switch r.Message {
	case forge.MsgStepStarted:
		if h.groups && *h.depth == 0 {
			fmt.Fprintf(h.w, "::group::%s\n", step)
		}
		*h.depth++
		fmt.Fprintf(h.w, "%s: started\n", step)
	case forge.MsgStepDone:
		d := attrs[forge.AttrDuration].Duration().Round(100 * time.Millisecond)
		switch attrs[forge.AttrCache].String() {
		case forge.CacheBuilt:
			fmt.Fprintf(h.w, "%s: done in %s\n", step, d)
		case forge.CacheCached:
			fmt.Fprintf(h.w, "%s: done in %s, from cache\n", step, d)
		default:
			fmt.Fprintf(h.w, "%s: done in %s (the engine does not report whether it came from its cache)\n", step, d)
		}
		if *h.depth > 0 {
			*h.depth--
		}
		if *h.depth == 0 && h.groups {
			fmt.Fprintln(h.w, "::endgroup::")
		}
	default:
		fmt.Fprintln(h.w, r.Message)
	}
	return nil
}

// redactingWriter is the log's sink: each write (one line of the handler) goes through the
// one redaction rule (lock.Redact) before it reaches the terminal or the Actions log.
type redactingWriter struct {
	w       io.Writer
	secrets []string
}

func (r redactingWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(r.w, lock.Redact(string(p), r.secrets...)); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (h *lineHandler) closeGroups() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if *h.depth > 0 && h.groups {
		fmt.Fprintln(h.w, "::endgroup::")
	}
	*h.depth = 0
}
