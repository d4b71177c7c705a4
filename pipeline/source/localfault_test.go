package source_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/source"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// faultEnv makes TestWriteFaultChild the child of TestAWriteFaultKeepsTheVerifiedCache: it
// holds "cache repo commit tree".
const faultEnv = "NGINX_FORGE_TEST_WRITE_FAULT"

// Issue 47: a full disk was reported as a hostile archive ("not a readable tar archive:
// write ...: no space left on device") and the cache's verified git-tree/ file was deleted.
// Here a real write fault of this machine: a child process whose file-size limit
// (RLIMIT_FSIZE, 16 bytes) makes every write past it fail with EFBIG fetches a git source
// that is in the cache (its repository gone). The error names the path it could not write
// and says it is this machine's; every file the cache held is still there, unchanged.
func TestAWriteFaultKeepsTheVerifiedCache(t *testing.T) {
	repo, commit, tree := gitUpstream(t)
	cache := t.TempDir()
	f := source.New(source.WithCacheDir(cache), source.WithSink(testenv.Progress(t)))
	if _, err := f.Fetch(context.Background(), gitComponent(repo, commit, tree)); err != nil {
		t.Fatal(err)
	}
	before := verifiedFiles(t, cache)
	if len(before) == 0 {
		t.Fatal("nothing cached under git-tree/")
	}
	os.RemoveAll(strings.TrimPrefix(repo, "file://")) // the cache alone must serve
	cmd := exec.Command(os.Args[0], "-test.run=^TestWriteFaultChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), faultEnv+"="+strings.Join([]string{cache, repo, commit, tree}, " "))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	said := string(out)
	for _, w := range []string{filepath.Join(cache, "tmp") + "/", "on this machine", "file too large"} {
		if !strings.Contains(said, w) {
			t.Errorf("the error lacks %q:\n%s", w, said)
		}
	}
	for _, w := range []string{"refused", "not a readable tar archive"} {
		if strings.Contains(said, w) {
			t.Errorf("the error says %q of a write fault:\n%s", w, said)
		}
	}
	if after := verifiedFiles(t, cache); !slices.Equal(after, before) {
		t.Errorf("verified cache files before the fault %q, after %q", before, after)
	}
}

// TestWriteFaultChild fetches under a 16-byte file-size limit; it prints the error.
func TestWriteFaultChild(t *testing.T) {
	args := strings.Fields(os.Getenv(faultEnv))
	if len(args) != 4 {
		t.Skip("the child of TestAWriteFaultKeepsTheVerifiedCache")
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 16, Max: 16}); err != nil {
		t.Fatal(err)
	}
	_, err := source.New(source.WithCacheDir(args[0])).Fetch(context.Background(), gitComponent(args[1], args[2], args[3]))
	if err == nil {
		t.Fatal("fetched under a 16-byte file-size limit")
	}
	t.Log(err)
}

// verifiedFiles lists the cache's verified files (sha256/, git-tree/) with their SHA-256.
func verifiedFiles(t *testing.T, cache string) []string {
	t.Helper()
	var out []string
	for _, dir := range []string{"sha256", "git-tree"} {
		filepath.WalkDir(filepath.Join(cache, dir), func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				b, _ := os.ReadFile(p)
				out = append(out, fmt.Sprintf("%s %x", p, sha256.Sum256(b)))
			}
			return nil
		})
	}
	return out
}
