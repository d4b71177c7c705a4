package daggerexec

import (
	"bytes"
	"sync"
)

// lineLogf is an io.Writer (the Dagger SDK's log output) that hands each complete line to
// logf; a last line without its newline is handed over by flush.
type lineLogf struct {
	mu   sync.Mutex
	logf func(format string, args ...any)
	buf  []byte
}

func (w *lineLogf) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.logf("%s", bytes.TrimRight(w.buf[:i], "\r"))
		w.buf = w.buf[i+1:]
	}
	return len(p), nil
}

func (w *lineLogf) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.logf("%s", w.buf)
		w.buf = nil
	}
}
