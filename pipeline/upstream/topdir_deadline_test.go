package upstream

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// zeroBomb writes a .tar.gz whose one file is size zero bytes: a few hundred KB on disk per
// hundred MB unpacked.
func zeroBomb(t *testing.T, size int64) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "nginx-9.9.9.tar.gz")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zw, _ := gzip.NewWriterLevel(f, gzip.BestSpeed)
	tw := tar.NewWriter(zw)
	if err := tw.WriteHeader(&tar.Header{Name: "nginx-9.9.9/big", Mode: 0o644, Size: size, Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	zero := make([]byte, 1<<20)
	for n := int64(0); n < size; n += int64(len(zero)) {
		if _, err := tw.Write(zero[:min(int64(len(zero)), size-n)]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return file
}

// Issue 29: an 8 MB download that expands to 8 GiB ran past a 3 s --timeout while its top
// directory was read, and the lock was rewritten. TopDir stops when the run's context ends.
func TestTopDirKeepsTheDeadline(t *testing.T) {
	file := zeroBomb(t, 256<<20)
	if top, err := TopDir(context.Background(), file); err != nil || top != "nginx-9.9.9" {
		t.Fatalf("TopDir = %q, %v", top, err)
	}
	ended, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ended.Done()
	if top, err := TopDir(ended, file); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("after the deadline: TopDir = %q, %v; want the deadline's error", top, err)
	}
	// A deadline that ends while the tarball is being read stops it there.
	ctx, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	start := time.Now()
	_, err := TopDir(ctx, file)
	if took := time.Since(start); err == nil && took < 20*time.Millisecond {
		t.Skipf("read 256 MiB in %s, before the deadline", took)
	}
	if took := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || took > 2*time.Second {
		t.Errorf("a 20ms deadline: err = %v after %s; want the deadline's error, soon", err, took)
	}
}
