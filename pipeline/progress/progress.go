// Package progress is what a build reports as it happens, as typed events delivered to one
// Sink: the engines' stages (pipeline/engine/host, daggerexec) and the build pipeline's own
// steps, pushes, tags and smoke results (pipeline/forge). The command renders them
// (ci/log.go); nothing turns an event into text and back. It imports nothing of this
// repository, so every emitter can use it (compare go-containerregistry's remote.WithProgress).
package progress

import (
	"fmt"
	"time"
)

// Event is one report. The types below are all there are; a Sink switches on them.
type Event interface{ event() }

// Sink receives a build's events, in order for each emitter. Send may be called from more
// than one goroutine (the Dagger engine's own output arrives on the SDK's), so a Sink that
// keeps state guards it, as the command's renderer does.
type Sink interface{ Send(Event) }

// SinkFunc is a function as a Sink; a nil SinkFunc discards.
type SinkFunc func(Event)

// Send calls f.
func (f SinkFunc) Send(e Event) {
	if f != nil {
		f(e)
	}
}

// Discard is the Sink of a caller that wants no progress.
var Discard Sink = SinkFunc(nil)

// Cache says whether a step's result came from a cache.
type Cache int

const (
	// CacheUnknown: the engine does not say (Dagger reports no cache hits to its SDK).
	CacheUnknown Cache = iota
	// Built: the step ran.
	Built
	// Cached: the step's result was reused.
	Cached
)

// StepStarted: a step (a plan stage such as "nginx (linux/amd64)", or the build's own
// "preflight", "assemble (linux/amd64)", "smoke (...)", "push (...)") started.
type StepStarted struct{ Step string }

// StepDone: the step ended after Duration; Cache says whether its result was reused.
type StepDone struct {
	Step     string
	Duration time.Duration
	Cache    Cache
	// Failed: the step ended in an error (reported after it), so every started step has
	// its end line.
	Failed bool
}

// Pushed: Platform's image is in the registry as Digest (REPO@sha256:...) and passed its
// smoke test there; AlreadyPresent when nothing had to be uploaded.
type Pushed struct {
	Platform       string
	Digest         string
	AlreadyPresent bool
}

// IndexPushed: the index of several platforms' images is in the registry as Digest.
type IndexPushed struct {
	Digest    string
	Platforms []string
}

// Signed: Digest was signed and attested; Signature and Attestations are the digests of the
// signature and attestation manifests. SBOMsOnly: the attestations are the SBOMs alone, no
// provenance (ci manifest's index: it built nothing; its images carry their builds').
type Signed struct {
	Digest, Signature, Attestations string
	SBOMsOnly                       bool
}

// Tagged: Tags (full references; none with --digest-only) now point at Digest (sha256:...).
type Tagged struct {
	Digest string
	Tags   []string
}

// Smoked: the smoke suite ran against Platform's image. Table is its report as a table;
// OK is false when a check failed or did not run (the build stops).
type Smoked struct {
	Platform                string
	Passed, Failed, Skipped int
	Table                   string
	OK                      bool
}

// Checked: one smoke check ended with Status (PASS, FAIL, SKIP) after Duration; Detail is
// the first line of what it found. Smoked reports the whole suite.
type Checked struct {
	Name, Status, Detail string
	Duration             time.Duration
}

// Level is how much a Note matters.
type Level int

const (
	// Detail: downloads, verification, registry steps (shown with -v).
	Detail Level = iota
	// Info: a line a person should see.
	Info
	// Warning: something a person should act on; the build goes on.
	Warning
)

// Note is a line of text with no structure of its own: the one way free text is reported
// (what has structure, a step or a push, is its own event above). An emitter sends it to its
// Sink as sink.Send(progress.Detailf(...)); no package keeps a printf wrapper of its own
// around a Sink (pipeline/internal/importrules, TestOneSink).
type Note struct {
	Level Level
	Text  string
}

// Detailf is a Detail Note: shown with -v.
func Detailf(format string, args ...any) Note {
	return Note{Level: Detail, Text: fmt.Sprintf(format, args...)}
}

// Infof is an Info Note: a line a person should see.
func Infof(format string, args ...any) Note {
	return Note{Level: Info, Text: fmt.Sprintf(format, args...)}
}

// Warningf is a Warning Note: something a person should act on.
func Warningf(format string, args ...any) Note {
	return Note{Level: Warning, Text: fmt.Sprintf(format, args...)}
}

func (StepStarted) event() {}
func (StepDone) event()    {}
func (Pushed) event()      {}
func (IndexPushed) event() {}
func (Signed) event()      {}
func (Tagged) event()      {}
func (Smoked) event()      {}
func (Checked) event()     {}
func (Note) event()        {}
