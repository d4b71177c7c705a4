package testenv

import (
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/progress"
)

// Progress is a progress.Sink that writes each event to t's log (a Note as its text, any
// other event as its fields): what a test gives a library that reports through a Sink, so
// a failing test shows the runc commands, registry steps and stages that led there.
func Progress(t testing.TB) progress.Sink {
	return progress.SinkFunc(func(e progress.Event) {
		t.Helper()
		if n, ok := e.(progress.Note); ok {
			t.Log(n.Text)
			return
		}
		t.Logf("%+v", e)
	})
}
