package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/progress"
	"github.com/nginx-forge/nginx-forge/pipeline/safeio"
)

// lineSink renders the library's progress events (pipeline/progress) for a person: one plain
// line each (Detail notes and the smoke table only with -v, a failed suite's table always),
// a step as "STEP: started" and "STEP: done in D[, from cache]"; in GitHub Actions each
// top-level step's lines are one collapsible group (::group::/::endgroup::, which do not
// nest). It is the only logging the commands give the library: the engines, the image
// publisher and the smoke suite send their notes and checks to it.
type lineSink struct {
	mu      sync.Mutex
	w       io.Writer
	verbose bool
	groups  bool
	// quiet: heartbeat prints nothing (-q of bench and tune, whose runBounded starts it).
	quiet bool
	depth int
	// running are the steps started and not done yet, in the order they started: what the
	// heartbeat names.
	running []runningStep
}

type runningStep struct {
	step  string
	start time.Time
}

// heartbeatEvery is how often the heartbeat says which steps are still running (issue 40:
// OpenSSL's compile ran a minute and a half without a line).
const heartbeatEvery = 15 * time.Second

// Test seams: the clock a step's start is read from, and the heartbeat's ticker (a channel
// of the times to report at, and its stop). Tests tick by hand instead of waiting.
var (
	logNow        = time.Now
	heartbeatTick = func() (<-chan time.Time, func()) {
		t := time.NewTicker(heartbeatEvery)
		return t.C, t.Stop
	}
)

// heartbeat prints, every heartbeatEvery until stop is called, one line naming each step
// still running and how long it has run ("still running: openssl (linux/amd64) 1m30s"), so
// that a long compile, download or push is never silent. Nothing when no step runs.
func (s *lineSink) heartbeat() (stop func()) {
	if s.quiet {
		return func() {}
	}
	tick, stopTick := heartbeatTick()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			case now := <-tick:
				s.beat(now)
			}
		}
	}()
	return func() {
		stopTick()
		close(done)
		wg.Wait()
	}
}

func (s *lineSink) beat(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.running) == 0 {
		return
	}
	parts := make([]string, len(s.running))
	for i, r := range s.running {
		parts[i] = fmt.Sprintf("%s %s", r.step, now.Sub(r.start).Round(time.Second))
	}
	fmt.Fprintf(s.w, "still running: %s\n", strings.Join(parts, ", "))
}

// newLog is the sink a command gives the library, and a function that closes a group left
// open by a step that failed before its end.
func newLog(w io.Writer, verbose, groups bool) (*lineSink, func()) {
	// The run's credentials (GITHUB_TOKEN, the Docker config's) are redacted from every line,
	// whatever the library put into the event.
	secrets := append([]string{os.Getenv("GITHUB_TOKEN")}, dockerConfigSecrets()...)
	s := &lineSink{w: redactingWriter{w, secrets}, verbose: verbose, groups: groups}
	return s, s.closeGroups
}

// Send renders e.
func (s *lineSink) Send(e progress.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch e := e.(type) {
	case progress.StepStarted:
		if s.groups && s.depth == 0 {
			fmt.Fprintf(s.w, "::group::%s\n", e.Step)
		}
		s.depth++
		s.running = append(s.running, runningStep{e.Step, logNow()})
		fmt.Fprintf(s.w, "%s: started\n", e.Step)
	case progress.StepDone:
		s.stepDone(e)
	case progress.Note:
		s.note(e)
	case progress.Smoked:
		if !e.OK || s.verbose {
			fmt.Fprintln(s.w, e.Table)
		}
		if e.OK {
			fmt.Fprintf(s.w, "smoke (%s): %d passed, %d failed, %d skipped\n", e.Platform, e.Passed, e.Failed, e.Skipped)
		}
	case progress.Checked:
		if s.verbose {
			fmt.Fprintf(s.w, "%s: %s (%s) %s\n", e.Name, e.Status, e.Duration, e.Detail)
		}
	case progress.Pushed:
		state := "pushed"
		if e.AlreadyPresent {
			state = "already in the registry"
		}
		fmt.Fprintf(s.w, "push: %s (%s) %s, smoke-tested\n", e.Digest, e.Platform, state)
	case progress.IndexPushed:
		fmt.Fprintf(s.w, "push: index %s of %s\n", e.Digest, strings.Join(e.Platforms, ", "))
	case progress.Signed:
		what := "SBOM and provenance attestations"
		if e.SBOMsOnly {
			what = "SBOM attestations"
		}
		fmt.Fprintf(s.w, "push: signed %s (signature %s; %s %s)\n", e.Digest, e.Signature, what, e.Attestations)
	case progress.Tagged:
		tags := "none"
		if len(e.Tags) > 0 {
			tags = strings.Join(e.Tags, ", ")
		}
		fmt.Fprintf(s.w, "push: tags moved to %s: %s\n", e.Digest, tags)
	default:
		fmt.Fprintf(s.w, "%+v\n", e) // an event this renderer does not know yet: shown, not lost
	}
}

func (s *lineSink) stepDone(e progress.StepDone) {
	for i, r := range s.running {
		if r.step == e.Step {
			s.running = append(s.running[:i], s.running[i+1:]...)
			break
		}
	}
	d := e.Duration.Round(100 * time.Millisecond)
	switch {
	case e.Failed:
		fmt.Fprintf(s.w, "%s: failed after %s\n", e.Step, d)
	case e.Cache == progress.Built:
		fmt.Fprintf(s.w, "%s: done in %s\n", e.Step, d)
	case e.Cache == progress.Cached:
		fmt.Fprintf(s.w, "%s: done in %s, from cache\n", e.Step, d)
	default:
		fmt.Fprintf(s.w, "%s: done in %s (the engine does not report whether it came from its cache)\n", e.Step, d)
	}
	if s.depth > 0 {
		s.depth--
	}
	if s.depth == 0 && s.groups {
		fmt.Fprintln(s.w, "::endgroup::")
	}
}

func (s *lineSink) note(n progress.Note) {
	switch {
	case n.Level == progress.Detail && !s.verbose:
	case n.Level == progress.Warning:
		fmt.Fprintf(s.w, "warning: %s\n", n.Text)
	default:
		fmt.Fprintln(s.w, n.Text)
	}
}

func (s *lineSink) closeGroups() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.depth > 0 && s.groups {
		fmt.Fprintln(s.w, "::endgroup::")
	}
	s.depth = 0
	s.running = nil
}

// redactingWriter is the log's sink: each write (one line of the renderer) goes through the
// one redaction rule (safeio.Redact) before it reaches the terminal or the Actions log.
type redactingWriter struct {
	w       io.Writer
	secrets []string
}

func (r redactingWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(r.w, safeio.Redact(string(p), r.secrets...)); err != nil {
		return 0, err
	}
	return len(p), nil
}
