package dockerfile_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/dockerfile"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
)

// Issue 29: a mirror URL with user:password@ was written into the Dockerfile. It is refused,
// and the error does not quote the password either.
func TestMirrorCredentialsNeverReachTheDockerfile(t *testing.T) {
	l := lock.Default()
	p, err := plan.New(l)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"https://robot:s3cret-pw@mirror.example/src", "http://robot@127.0.0.1:8000/src", "http://:s3cret-pw@127.0.0.1:8000/"} {
		b, err := dockerfile.Render(p, l, dockerfile.WithSourceMirror(m))
		if !errors.Is(err, dockerfile.ErrMirrorURL) {
			t.Errorf("%s: err = %v, want ErrMirrorURL", m, err)
		}
		if strings.Contains(string(b), "s3cret") || (err != nil && strings.Contains(err.Error(), "s3cret")) {
			t.Errorf("%s: the password was written or printed", m)
		}
	}
}
