package forge

import (
	"bytes"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/engine"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
)

// A build reports its progress as typed events (pipeline/progress) on the Sink given in
// Options; these are the shorthands the steps use.

func (b *build) stepStarted(step string) { b.sink.Send(progress.StepStarted{Step: step}) }

func (b *build) stepDone(step string, d time.Duration, c progress.Cache) {
	b.sink.Send(progress.StepDone{Step: step, Duration: d, Cache: c})
}

// stageProgress is what the engine reports a platform's stages to: the same step events on
// the build's sink, the step named with the platform ("nginx (linux/amd64)").
func (b *build) stageProgress(platform string) progress.Sink {
	return progress.SinkFunc(func(e progress.Event) {
		switch e := e.(type) {
		case progress.StepStarted:
			e.Step = fmt.Sprintf("%s (%s)", e.Step, platform)
			b.sink.Send(e)
		case progress.StepDone:
			e.Step = fmt.Sprintf("%s (%s)", e.Step, platform)
			b.sink.Send(e)
		}
	})
}

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
