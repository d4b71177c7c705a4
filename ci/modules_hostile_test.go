//go:build integration

package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// modulesTestLock is the module catalogue's test lock: the test twin's stack plus every
// catalogue module this machine's Debian mirror serves.
var modulesTestLock = filepath.Join(testenv.RepoRoot(), "pipeline", "lock", "testdata", "modules.lock.json")

// A hostile module source stops the build before any stage runs, naming the module's file:
// for each source of each catalogue module (its own and its library's), the mirror serves
// the real archive with one byte changed in its place, and once another real archive (the
// previous module source's, which the extractor would accept), and `ci build --modules
// +MODULE` refuses it with nothing built and nothing cached but the verified sources.
// Nothing is compiled.
func TestBuildRefusesHostileModuleSources(t *testing.T) {
	mirror := testenv.MirrorDir(t)
	l, err := lock.Load(modulesTestLock)
	if err != nil {
		t.Fatal(err)
	}
	var other []byte // another real archive: a different tree under the pinned name
	tested := 0
	for _, m := range plan.Modules {
		// The catalogue's modules (brotli's sources are tested as the twin's, by the
		// default lock's tests).
		if len(m.Components) == 0 || m.Encoding != "" || !l.HasComponents(m.Components...) {
			continue
		}
		for _, name := range m.Components {
			c := l.MustComponent(name)
			file := c.FileName()
			real, err := os.ReadFile(filepath.Join(mirror, file))
			if err != nil {
				testenv.Missing(t, file+" in the mirror", "run .ci/fetch-sources again")
			}
			flipped := bytes.Clone(real)
			flipped[len(flipped)/2] ^= 0x01
			cases := []struct {
				what string
				body []byte
			}{{"one byte changed", flipped}}
			if other != nil && tested == 1 {
				// Once: another real archive, which the extractor would accept.
				cases = append(cases, struct {
					what string
					body []byte
				}{"another module's archive", other})
			}
			other = real
			for _, served := range cases {
				t.Run(m.Name+"/"+name+"/"+served.what, func(t *testing.T) {
					refusedBeforeAnyStage(t, mirror, file, served.body, m.Name, name, c.SHA256)
				})
				tested++
			}
		}
	}
	if tested == 0 {
		t.Fatal("no catalogue module source was served hostile: the test lock has no modules")
	}
}

// refusedBeforeAnyStage serves body as file (the real mirror otherwise) to `ci build
// --modules +module` of the modules test lock and wants a refusal naming the component, the
// file and its pinned SHA-256, with no install tree and nothing in the build cache but sources.
func refusedBeforeAnyStage(t *testing.T, mirror, file string, body []byte, module, component, sum string) {
	t.Helper()
	files := http.FileServer(http.Dir(mirror))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/"+file {
			w.Write(body)
			return
		}
		files.ServeHTTP(w, r)
	}))
	defer srv.Close()
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "xdg")) // the source cache
	out, cache := filepath.Join(dir, "tree"), filepath.Join(dir, "cache")
	var stderr bytes.Buffer
	err := runBuild(context.Background(), buildFlags{engine: "host", tree: out, lockFile: modulesTestLock, modules: "+" + module,
		mirror: srv.URL, platform: mustPlatforms("linux/amd64"), cache: cache}, io.Discard, &stderr)
	if err == nil {
		t.Fatalf("a hostile %s was accepted", file)
	}
	for _, want := range []string{"source " + component + " ", file, sum, "nothing was built"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s was created: %v", out, err)
	}
	entries, _ := os.ReadDir(cache)
	for _, e := range entries {
		if e.Name() != "sources" {
			t.Errorf("the build created %s in its cache", filepath.Join(cache, e.Name()))
		}
	}
}
