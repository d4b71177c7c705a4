package smoke_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/basetest"
	"github.com/nginx-forge/nginx-forge/pipeline/image"
	"github.com/nginx-forge/nginx-forge/pipeline/internal/testenv"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/ocirun"
	"github.com/nginx-forge/nginx-forge/pipeline/smoke"
)

func TestDevHostNginx(t *testing.T) {
	if os.Getenv("DEV") == "" {
		t.Skip("dev")
	}
	base, _ := basetest.For(t, basetest.Options{})
	l, err := lock.Load(testenv.TestLockPath())
	if err != nil {
		t.Fatal(err)
	}
	img, err := image.Assemble(base, "/tmp/ddev/tree", l, image.WithBaseRef(basetest.Name))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := ocirun.Prepare(ctx, img, ocirun.WithLogger(t.Logf))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c, err := b.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop(ctx)
	rep := smoke.Run(ctx, c, smoke.Options{Logf: t.Logf})
	var sb stringsBuilder
	rep.Print(&sb)
	t.Log("\n" + sb.String())
	t.Log(string(c.Logs()))
}

type stringsBuilder struct{ b []byte }

func (s *stringsBuilder) Write(p []byte) (int, error) { s.b = append(s.b, p...); return len(p), nil }
func (s *stringsBuilder) String() string              { return string(s.b) }
