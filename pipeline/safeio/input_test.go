package safeio

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOpenInputRefusesWhatIsNotARegularFile: a named pipe, a device, a directory (also
// behind a symbolic link) are refused at once; a regular file, also behind a link, is read.
func TestOpenInputRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	t.Cleanup(func() { // a reader a regression left waiting sees end of file
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("text"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := func(name, to string) string {
		p := filepath.Join(dir, name)
		if err := os.Symlink(to, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		name, path, kind string // kind "" is a regular file
	}{
		{"named pipe", fifo, "a named pipe"},
		{"link to a named pipe", link("to-fifo", fifo), "a named pipe"},
		{"directory", dir, "a directory"},
		{"link to a directory", link("to-dir", dir), "a directory"},
		{"character device", os.DevNull, "a character device"},
		{"regular file", file, ""},
		{"link to a regular file", link("to-file", file), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { _, err := ReadInput(c.path, 100); done <- err }()
			var err error
			select {
			case err = <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("still reading after 5s")
			}
			if c.kind == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var nr *NotRegularError
			if !errors.As(err, &nr) || nr.File != c.path {
				t.Fatalf("err = %v, want a *NotRegularError for %s", err, c.path)
			}
			if !strings.Contains(err.Error(), c.path+" is "+c.kind) {
				t.Errorf("err = %v, want it to say %s is %s", err, c.path, c.kind)
			}
		})
	}
	if _, err := ReadInput(file, 3); err == nil || !strings.Contains(err.Error(), "larger than the 3 bytes") {
		t.Errorf("over the limit: err = %v", err)
	}
}
