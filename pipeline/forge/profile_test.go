package forge_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/forge"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/source"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/upstreamtest"
)

// A pgo build of a lock with a recorded profile for its plan fetches the profile like a
// source (through the mirror, checked against the lock's SHA-256) before anything builds,
// and a profile that does not match its checksum stops the build before the engine runs.
func TestRecordedProfileIsFetchedAndVerified(t *testing.T) {
	for _, tampered := range []bool{false, true} {
		w := newWorld(t)
		p, err := plan.New(w.lock, plan.WithOptimize(plan.OptimizePGO))
		if err != nil {
			t.Fatal(err)
		}
		body := upstreamtest.Tarball(t, "pgo", map[string]string{"compiler": "a recorded profile"})
		sum := sha256.Sum256(body)
		rec := lock.Profile{Platform: "linux/amd64", Training: p.TrainingKey, URL: "https://pgo.example.org/profiles/nginx-forge-pgo-amd64.tar.gz", SHA256: hex.EncodeToString(sum[:])}
		l := *w.lock
		l.Profiles = []lock.Profile{rec}
		if tampered {
			body = upstreamtest.Tarball(t, "pgo", map[string]string{"compiler": "another profile"})
		}
		w.serve("nginx-forge-pgo-amd64.tar.gz", body)
		req := forge.Request{Lock: &l, Mirror: w.mirror, Optimize: plan.OptimizePGO, Tree: t.TempDir()}
		_, err = runBuild(&fakeEngine{j: w.j}, req)
		fetched, built := w.j.first("fetch /nginx-forge-pgo-amd64.tar.gz"), w.j.first("build ")
		if tampered {
			var ce *source.ChecksumError
			if !errors.As(err, &ce) || built >= 0 {
				t.Errorf("tampered profile: err %v (want a checksum error), built at %d", err, built)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if fetched < 0 || built < fetched {
			t.Errorf("the profile was not fetched before the build: %q", w.j.list())
		}
	}
}

// Recording a profile builds the training plan, writes its output as a tarball that depends
// on the files only (twice: the same SHA-256), and reports the lock entry of the plan's
// training key. It takes no image, tree or other optimization mode.
func TestRecordProfile(t *testing.T) {
	w := newWorld(t)
	want, err := plan.NewTraining(w.lock)
	if err != nil {
		t.Fatal(err)
	}
	var sums []string
	for i := 0; i < 2; i++ {
		dir := t.TempDir()
		res, err := runBuild(&fakeEngine{j: w.j}, forge.Request{Lock: w.lock, Mirror: w.mirror, ProfileDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Profiles) != 1 {
			t.Fatalf("profiles: %+v", res.Profiles)
		}
		p := res.Profiles[0]
		if p.Platform != "linux/amd64" || p.Training != want.TrainingKey || p.URL != "" || !strings.HasPrefix(p.File, dir+"/nginx-forge-pgo-amd64-") {
			t.Errorf("recorded %+v", p)
		}
		b, err := os.ReadFile(p.File)
		if err != nil {
			t.Fatal(err)
		}
		if s := sha256.Sum256(b); hex.EncodeToString(s[:]) != p.SHA256 {
			t.Error("the reported SHA-256 is not the file's")
		}
		var names []string
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(zr)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, h.Name)
			if h.Uid != 0 || h.ModTime.Unix() != w.lock.SourceDateEpoch {
				t.Errorf("%s: uid %d, mtime %s", h.Name, h.Uid, h.ModTime)
			}
		}
		if got := strings.Join(names, " "); got != "pgo/ pgo/compiler pgo/nginx/ pgo/nginx/src#core#nginx.gcda pgo/openssl/ pgo/openssl/ssl#ssl_lib.gcda" {
			t.Errorf("profile tarball holds %s", got)
		}
		sums = append(sums, p.SHA256)
	}
	if sums[0] != sums[1] {
		t.Error("two recordings of the same files differ")
	}
	for _, bad := range []forge.Request{
		{Lock: w.lock, ProfileDir: t.TempDir(), Push: true, Repo: w.repo},
		{Lock: w.lock, ProfileDir: t.TempDir(), Tree: t.TempDir()},
		{Lock: w.lock, ProfileDir: t.TempDir(), Optimize: plan.OptimizeLTO},
	} {
		if _, err := bad.Resolve(); err == nil || !strings.Contains(err.Error(), "recording a PGO profile") {
			t.Errorf("%+v: Resolve = %v, want the profile request refused", bad, err)
		}
		before := len(w.j.list())
		if _, err := runBuild(&fakeEngine{j: w.j}, bad); err == nil || len(w.j.list()) != before {
			t.Errorf("%+v: Run = %v (journal %q), want it refused before the engine is asked anything", bad, err, w.j.list()[before:])
		}
	}
}
