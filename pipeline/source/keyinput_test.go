package source_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/source"
)

// Issue 29: a key file of the keys directory that is a named pipe, a device or a directory
// is refused at once, naming the file, not read (a named pipe would wait forever).
func TestKeysDirEntryMustBeARegularFile(t *testing.T) {
	for _, kind := range []string{"named pipe", "directory", "character device"} {
		t.Run(kind, func(t *testing.T) {
			keysDir := t.TempDir()
			file := filepath.Join(keysDir, opensslKey+".asc")
			switch kind {
			case "named pipe":
				if err := syscall.Mkfifo(file, 0o644); err != nil {
					t.Skipf("mkfifo: %v", err)
				}
				t.Cleanup(func() {
					if f, err := os.OpenFile(file, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
						f.Close()
					}
				})
			case "directory":
				if err := os.Mkdir(file, 0o755); err != nil {
					t.Fatal(err)
				}
			default:
				if err := os.Symlink(os.DevNull, file); err != nil {
					t.Fatal(err)
				}
			}
			f := source.New(source.WithCacheDir(t.TempDir()), source.WithMirror("http://127.0.0.1:9"), source.WithKeysDir(keysDir))
			done := make(chan error, 1)
			go func() { _, err := f.SignerKey(context.Background(), opensslKey); done <- err }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "not a regular file") {
					t.Errorf("err = %v; want %s refused as not a regular file", err, file)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("still reading the key after 5s")
			}
		})
	}
}
