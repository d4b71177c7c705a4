package unpack

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// deepArchive is a .tar.gz of n empty files, all in one directory depth segments deep
// (counting src-1.0), each segment seg bytes long: only the first file's name implies the
// directories.
func deepArchive(t testing.TB, n, depth, seg int) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	tw := tar.NewWriter(zw)
	dir := "src-1.0/" + strings.Repeat(strings.Repeat("d", seg)+"/", depth-2)
	for i := range n {
		name := dir + fmt.Sprintf("%0*d", seg, i)
		if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Format: tar.FormatPAX}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	return buf.Bytes()
}

// Issue 47: every entry joined and hashed the path of each of its ancestors, so the work of
// an entry grew with the square of its depth: a 10,000-entry version of the archive
// used 427 s of CPU and was not done. Now an entry costs work in proportion to its name. Two
// archives of 10,000 files at half the depth limit and at the limit (names of about 2,000
// and 4,000 bytes): the bytes the extractor allocates, a count of its work that does not
// depend on the machine's speed, grow with the names' bytes (a ratio near 2), not with their
// square (near 4, as before). The time ratio is logged, not judged.
func TestExtractWorkIsLinearInTheNames(t *testing.T) {
	const n, seg = 10_000, 30
	type run struct {
		alloc uint64
		took  time.Duration
	}
	measure := func(depth int) run {
		b := deepArchive(t, n, depth, seg)
		dir := t.TempDir()
		archive := filepath.Join(dir, "src-1.0.tar.gz")
		if err := os.WriteFile(archive, b, 0o644); err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		res, err := Extract(context.Background(), archive, filepath.Join(dir, "tree"), DefaultLimits)
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatalf("depth %d: %v", depth, err)
		}
		if res.Entries != n {
			t.Fatalf("depth %d: %d entries, want %d", depth, res.Entries, n)
		}
		return run{after.TotalAlloc - before.TotalAlloc, took}
	}
	half, full := measure(maxDepth/2), measure(maxDepth)
	ratio := float64(full.alloc) / float64(half.alloc)
	t.Logf("depth %d: %d bytes allocated in %s; depth %d: %d bytes in %s; ratio %.2f (time ratio %.2f)",
		maxDepth/2, half.alloc, half.took, maxDepth, full.alloc, full.took, ratio, float64(full.took)/float64(half.took))
	if ratio > 3 {
		t.Errorf("twice the depth cost %.2f times the work: the work grows faster than the names", ratio)
	}
	// A floor on the work too: the measure must see the names at all (each is read once).
	if full.alloc < n*maxDepth*seg {
		t.Errorf("%d bytes allocated for %d names of %d bytes: the measure misses the work", full.alloc, n, maxDepth*seg)
	}
}

// Issue 47's archive: 99,000 empty files 2,000 segments deep with names of about 4,000 bytes
// (here 2,000 of them: the refusal comes at the first header, and the rest only makes the
// test slower to build). Refused by the depth rule, naming it, from the first entry's header:
// the extractor reads one entry.
func TestExtractRefusesTheDeepArchiveAtItsFirstHeader(t *testing.T) {
	const n = 2000
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	tw := tar.NewWriter(zw)
	dir := "src-1.0/" + strings.Repeat("d/", 1998)
	for i := range n {
		tw.WriteHeader(&tar.Header{Name: dir + fmt.Sprintf("%06d", i), Typeflag: tar.TypeReg, Mode: 0o644, Format: tar.FormatPAX})
	}
	tw.Close()
	zw.Close()
	_, res, err := extractBytes(t, buf.Bytes(), DefaultLimits)
	if err == nil || !strings.Contains(err.Error(), "2000 segments deep, over the limit of 128 segments on a name") {
		t.Fatalf("err = %v, want the depth rule", err)
	}
	if res.Entries > 1 {
		t.Errorf("%d entries read before the refusal, want 1", res.Entries)
	}
}

// A name's implied directories count against the limit on entries: an archive of a few
// files each in its own chain of directories makes as many directories as it is deep.
func TestImpliedDirectoriesCountAsEntries(t *testing.T) {
	var ents []ent
	for i := range 10 {
		ents = append(ents, file(fmt.Sprintf("src-1.0/%d/", i)+strings.Repeat("d/", 100)+"f", ""))
	}
	_, _, err := extractBytes(t, gz(t, tarOf(t, ents...)), Limits{Entries: 1000, EntryBytes: 1, TotalBytes: 1})
	if err == nil || !strings.Contains(err.Error(), "more than 1000 entries (the limit on entries, counting the directories their names imply)") {
		t.Fatalf("err = %v, want the limit on entries", err)
	}
}
