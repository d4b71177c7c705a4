package daggerexec

import (
	"reflect"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/progress"
)

// The Dagger SDK writes its progress in pieces that do not follow lines; each line reaches
// the progress sink whole, once, and a last line without a newline at Close.
func TestEngineOutputArrivesInLines(t *testing.T) {
	var got []string
	w := &lineNotes{sink: progress.SinkFunc(func(e progress.Event) { got = append(got, e.(progress.Note).Text) })}
	for _, piece := range []string{"1: connect", " engine\r\n2: pull ", "ubuntu:24.04\n\n3: %s not a verb", " DONE"} {
		if n, err := w.Write([]byte(piece)); n != len(piece) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", piece, n, err)
		}
	}
	want := []string{"1: connect engine", "2: pull ubuntu:24.04", ""}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("before flush: %q, want %q", got, want)
	}
	w.flush()
	w.flush()
	want = append(want, "3: %s not a verb DONE")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("after flush: %q, want %q", got, want)
	}
}
