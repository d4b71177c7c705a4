package daggerexec

import (
	"bytes"
	"sync"

	"github.com/nginx-forge/nginx-forge/pipeline/progress"
)

// lineNotes is an io.Writer (the Dagger SDK's log output) that sends each complete line to
// sink as a Detail note; a last line without its newline is sent by flush.
type lineNotes struct {
	mu   sync.Mutex
	sink progress.Sink
	buf  []byte
}

func (w *lineNotes) note(line []byte) {
	w.sink.Send(progress.Note{Level: progress.Detail, Text: string(line)})
}

func (w *lineNotes) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.note(bytes.TrimRight(w.buf[:i], "\r"))
		w.buf = w.buf[i+1:]
	}
	return len(p), nil
}

func (w *lineNotes) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.note(w.buf)
		w.buf = nil
	}
}
