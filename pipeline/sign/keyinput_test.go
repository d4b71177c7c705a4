package sign

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Issue 29: --sign-key that is a named pipe, a device or a directory is refused at once.
func TestLoadKeyRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "key.pem")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	t.Cleanup(func() {
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	for _, path := range []string{fifo, dir, os.DevNull} {
		done := make(chan error, 1)
		go func() { _, err := LoadKey(path); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "--sign-key "+path) || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("%s: err = %v; want it refused as not a regular file, naming --sign-key", path, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: still reading after 5s", path)
		}
	}
}
