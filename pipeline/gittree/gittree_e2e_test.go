//go:build integration

package gittree

import (
	"path/filepath"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// The archives in ../shared/upstream hash to the trees their README names (the test lock
// pipeline/lock/testdata/aws-lc.twin.lock.json pins these).
func TestSharedUpstreamTrees(t *testing.T) {
	dir := testenv.SharedUpstream(t)
	for file, want := range map[string]string{
		"nginx-1.30.4-git.tar.gz": "296dce3d163a3a0b4151f5c8ab092defb4c32daf",
		"aws-lc-5.5.0.tar.gz":     "c5d1942d97ab4b20bc1245d578a9f1fe4f423f9e",
		"zlib-ng-2.2.2.tar.gz":    "7ea8314bf60e8a2354dcf06955b5149c5132bb3f",
	} {
		got, err := ofArchive(t, filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: tree %s, want %s", file, got, want)
		}
	}
}
