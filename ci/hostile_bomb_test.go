package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/upstreamtest"
)

// gzipBomb is a .tar.gz of about size/1000 bytes whose one file, top/zeros, is size zero
// bytes. It is built from gzip members (a gzip stream may be several, read one after the
// other): the tar header, then the same member of 64 MiB of zeros again and again, then the
// tar trailer, so making it costs one 64 MiB compression and nothing is ever written to
// disk unpacked.
func gzipBomb(t *testing.T, top string, size int64) []byte {
	t.Helper()
	const chunk = 64 << 20
	if size%chunk != 0 {
		t.Fatalf("size %d is not a multiple of %d", size, chunk)
	}
	member := func(b []byte) []byte {
		var out bytes.Buffer
		zw, err := gzip.NewWriterLevel(&out, gzip.BestCompression)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := zw.Write(b); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		return out.Bytes()
	}
	var hdr bytes.Buffer
	tw := tar.NewWriter(&hdr)
	if err := tw.WriteHeader(&tar.Header{Name: top + "/zeros", Mode: 0o644, Size: size, Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	// The header block alone (the writer would want the file's bytes before Close).
	head := append([]byte(nil), hdr.Bytes()...)
	zeros := member(make([]byte, chunk))
	var out bytes.Buffer
	out.Write(member(head))
	for n := int64(0); n < size; n += chunk {
		out.Write(zeros)
	}
	// The file ends on a 512-byte boundary (chunk is a multiple); two zero blocks end the
	// archive.
	out.Write(member(make([]byte, 1024)))
	return out.Bytes()
}

// Issue 29, class "waits without a bound": an 8 MB download that expands to 8 GiB ran past
// a 3 s --timeout while it was unpacked, and the lock was rewritten. Through the command
// line against a loopback upstream: the new OpenSSL release is such a bomb, correctly signed
// by the pinned key (so every check before the unpacking passes); check-updates --write
// --timeout 3s ends soon after the deadline (slack for a loaded machine), refuses the
// release naming the deadline, and leaves the lock as it was.
func TestCheckUpdatesStopsADecompressionBombAtTheDeadline(t *testing.T) {
	notInActions(t)
	s := upstreamtest.NewScenario(t)
	// 16 GiB (a 16 MB download): unpacking it all takes several times the deadline even on
	// a fast machine, so a run that does not stop at the deadline cannot pass the time bound.
	bomb := gzipBomb(t, "openssl-"+upstreamtest.NewOpenSSL, 16<<30)
	t.Logf("the bomb: %d bytes, 16 GiB unpacked", len(bomb))
	s.Upstream.SetFile(upstreamtest.TarballName, bomb)
	s.Upstream.SetFile(upstreamtest.SignatureName, s.Pinned.SignAt(t, bomb, upstreamtest.NewSignedAt))
	before := s.LockBytes(t)
	start := time.Now()
	code, out, errs := runCheckUpdates(t, s, "--write", "--skip-images", "--timeout", "3s")
	took := time.Since(start)
	if code != 1 {
		t.Errorf("exit %d, want 1 (nothing written)\nstdout: %s\nstderr: %s", code, out, errs)
	}
	if took > 8*time.Second {
		t.Errorf("took %s with a 3s --timeout", took)
	}
	for _, w := range []string{"openssl 3.5.8", "stopped at the run's deadline (--timeout)", "give a longer --timeout", "is unchanged"} {
		if !strings.Contains(errs, w) {
			t.Errorf("stderr lacks %q:\n%s", w, errs)
		}
	}
	if !bytes.Equal(before, s.LockBytes(t)) {
		t.Errorf("the lock was rewritten:\n%s", s.LockBytes(t))
	}
	t.Logf("ended after %s", took.Round(time.Millisecond))
}
