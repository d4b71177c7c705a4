package forge

import (
	"bytes"
	"fmt"
	"log/slog"
	"text/tabwriter"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/engine"
)

// A build reports its progress as records on the logger given with WithLogger. Two messages
// are events the command renders (a line each, or GitHub Actions groups around a step's lines):
const (
	// MsgStepStarted: a step (AttrStep, e.g. "nginx (linux/amd64)") started.
	MsgStepStarted = "step started"
	// MsgStepDone: a step ended after AttrDuration; AttrCache says whether its result came
	// from a cache (CacheBuilt, CacheCached, or CacheUnknown when the engine does not say).
	MsgStepDone = "step done"
)

// Attribute keys of the step events.
const (
	AttrStep     = "step"
	AttrDuration = "duration"
	AttrCache    = "cache"
)

// AttrCache's values.
const (
	CacheBuilt   = "built"
	CacheCached  = "cached"
	CacheUnknown = "unknown"
)

// CacheName is the AttrCache value of c.
func CacheName(c engine.Cache) string {
	switch c {
	case engine.Built:
		return CacheBuilt
	case engine.Cached:
		return CacheCached
	}
	return CacheUnknown
}

func (b *build) stepStarted(step string) {
	b.log.Info(MsgStepStarted, slog.String(AttrStep, step))
}

func (b *build) stepDone(step string, d time.Duration, c engine.Cache) {
	b.log.Info(MsgStepDone, slog.String(AttrStep, step), slog.Duration(AttrDuration, d), slog.String(AttrCache, CacheName(c)))
}

// progress turns an engine's step report into the step events.
func (b *build) progress(e engine.Event) {
	if e.Done {
		b.stepDone(e.Step, e.Duration, e.Cache)
	} else {
		b.stepStarted(e.Step)
	}
}

// logf is a line a person should see; vlogf one shown with -v.
func (b *build) logf(format string, a ...any)  { b.log.Info(fmt.Sprintf(format, a...)) }
func (b *build) vlogf(format string, a ...any) { b.log.Debug(fmt.Sprintf(format, a...)) }
func (b *build) warnf(format string, a ...any) { b.log.Warn("warning: " + fmt.Sprintf(format, a...)) }

// stagesTable is the engine's account of the stages: for a cached stage, the timings are
// those of the run that built it (what a cold build of it costs on the machine that built it).
func stagesTable(stages []engine.Stage) string {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "stage\tresult\tbuild wall\tuser\tsys\t")
	for _, s := range stages {
		state := "built"
		if s.Cached {
			state = "cached"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", s.Name, state, dur(s.Wall), dur(s.User), dur(s.Sys))
	}
	tw.Flush()
	return string(bytes.TrimRight(buf.Bytes(), "\n"))
}

func dur(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}
