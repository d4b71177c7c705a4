package main

import (
	"archive/tar"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"fmt"
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
	return gzipBombFiles(t, top, 1, size)
}

// gzipBombFiles is gzipBomb with n files of size zero bytes each (top/zeros-<i>).
func gzipBombFiles(t *testing.T, top string, n int, size int64) []byte {
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
	zeros := member(make([]byte, chunk))
	var out bytes.Buffer
	for i := 0; i < n; i++ {
		name := top + "/zeros"
		if n > 1 {
			name = fmt.Sprintf("%s/zeros-%d", top, i)
		}
		var hdr bytes.Buffer
		tw := tar.NewWriter(&hdr)
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: size, Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		// The header block alone (the writer would want the file's bytes before Close).
		out.Write(member(append([]byte(nil), hdr.Bytes()...)))
		for k := int64(0); k < size; k += chunk {
			out.Write(zeros)
		}
	}
	// The file ends on a 512-byte boundary (chunk is a multiple); two zero blocks end the
	// archive.
	out.Write(member(make([]byte, 1024)))
	return out.Bytes()
}

// Issues 29 and 35, decompression bombs: an 8 MB download that expanded to 8 GiB ran past a
// 3 s --timeout, and on a faster CPU a 16 GiB bomb inflated within the deadline and the lock
// was rewritten: a time bound alone is no bound. Through the command line against a loopback
// upstream: the new OpenSSL release is such a bomb, correctly signed by the pinned key (so
// every check before the unpacking passes); check-updates --write refuses it by the unpack
// policy's byte limit, the same on every machine, before inflating it, names the file, the
// entry and the limit, and leaves the lock as it was. The deadline stays as a backstop.
func TestCheckUpdatesRefusesADecompressionBombByItsSize(t *testing.T) {
	notInActions(t)
	s := upstreamtest.NewScenario(t)
	bomb := gzipBomb(t, "openssl-"+upstreamtest.NewOpenSSL, 16<<30)
	t.Logf("the bomb: %d bytes, 16 GiB unpacked", len(bomb))
	s.Upstream.SetFile(upstreamtest.TarballName, bomb)
	s.Upstream.SetFile(upstreamtest.SignatureName, s.Pinned.SignAt(t, bomb, upstreamtest.NewSignedAt))
	before := s.LockBytes(t)
	start := time.Now()
	code, out, errs := runCheckUpdates(t, s, "--write", "--skip-images", "--timeout", "30s")
	took := time.Since(start)
	if code != 1 {
		t.Errorf("exit %d, want 1 (nothing written)\nstdout: %s\nstderr: %s", code, out, errs)
	}
	for _, w := range []string{"openssl 3.5.8", "archive openssl-3.5.8.tar.gz from", `entry "openssl-3.5.8/zeros"`,
		"17179869184 bytes, over the limit of 268435456 bytes for one file", "nothing from it was used or cached", "is unchanged"} {
		if !strings.Contains(errs, w) {
			t.Errorf("stderr lacks %q:\n%s", w, errs)
		}
	}
	if !bytes.Equal(before, s.LockBytes(t)) {
		t.Errorf("the lock was rewritten:\n%s", s.LockBytes(t))
	}
	t.Logf("ended after %s", took.Round(time.Millisecond))
}

// Issue 35: a 50 MB archive that expands to 48 GiB in files each within the limit on one file
// ran 54 s under --timeout 3s. Now the limit on all files' bytes stops it after at most that
// many bytes were written (or the deadline first, on a slow disk): either way check-updates
// --write ends within --timeout and 2 s, refuses the release, and leaves the lock as it was.
func TestCheckUpdatesRefusesAManyFileBombWithinTheDeadline(t *testing.T) {
	notInActions(t)
	s := upstreamtest.NewScenario(t)
	bomb := oneStreamBomb(t, "openssl-"+upstreamtest.NewOpenSSL, 192, 256<<20)
	t.Logf("the bomb: %d bytes, 48 GiB unpacked in 192 files", len(bomb))
	s.Upstream.SetFile(upstreamtest.TarballName, bomb)
	s.Upstream.SetFile(upstreamtest.SignatureName, s.Pinned.SignAt(t, bomb, upstreamtest.NewSignedAt))
	before := s.LockBytes(t)
	start := time.Now()
	code, out, errs := runCheckUpdates(t, s, "--write", "--skip-images", "--timeout", "3s")
	took := time.Since(start)
	if code != 1 {
		t.Errorf("exit %d, want 1 (nothing written)\nstdout: %s\nstderr: %s", code, out, errs)
	}
	if took > 5*time.Second {
		t.Errorf("took %s with a 3s --timeout", took)
	}
	if !strings.Contains(errs, "more than the limit of 1073741824 bytes") && !strings.Contains(errs, "stopped at the deadline") {
		t.Errorf("stderr names neither the byte limit nor the deadline:\n%s", errs)
	}
	if !bytes.Equal(before, s.LockBytes(t)) {
		t.Errorf("the lock was rewritten:\n%s", s.LockBytes(t))
	}
	t.Logf("ended after %s", took.Round(time.Millisecond))
}

// oneStreamBomb is a .tar.gz of one gzip member (the policy refuses a second) whose n files
// are size bytes each. It is spliced from deflate blocks rather than compressed: a block
// that inflates to 64 MiB from nothing before it (a literal, then copies at distance 1),
// repeated, and each tar header as a stored block. The gzip trailer's CRC is not that of the
// contents: an extractor that keeps to its limits never reads that far.
func oneStreamBomb(t *testing.T, top string, n int, size int64) []byte {
	t.Helper()
	const chunk = 64 << 20
	var z bytes.Buffer
	fw, err := flate.NewWriter(&z, flate.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	fw.Write(make([]byte, chunk))
	fw.Flush() // ends byte-aligned with an empty stored block: z can be repeated
	stored := func(b []byte) []byte {
		l := len(b)
		return append([]byte{0x00, byte(l), byte(l >> 8), ^byte(l), ^byte(l >> 8)}, b...)
	}
	out := bytes.NewBuffer([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255})
	for i := 0; i < n; i++ {
		var hdr bytes.Buffer
		tw := tar.NewWriter(&hdr)
		if err := tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("%s/zeros-%d", top, i), Mode: 0o644, Size: size, Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		out.Write(stored(hdr.Bytes()[:512]))
		for k := int64(0); k < size; k += chunk {
			out.Write(z.Bytes())
		}
	}
	out.Write(stored(make([]byte, 1024)))
	out.Write([]byte{0x01, 0, 0, 0xff, 0xff}) // the final, empty stored block
	out.Write(make([]byte, 8))                // CRC-32 and size: never reached
	return out.Bytes()
}
