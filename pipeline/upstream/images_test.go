package upstream_test

import (
	"context"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/upstreamtest"
	"github.com/nginx-forge/nginx-forge/pipeline/upstream"
)

func TestImageDigest(t *testing.T) {
	s := upstreamtest.NewScenario(t)
	r := upstream.NewImageResolver(upstream.WithRegistry(s.Registry))
	ctx := context.Background()

	got, err := r.Digest(ctx, "docker.io/library/ubuntu:24.04")
	if err != nil || got != s.BuilderDigest {
		t.Fatalf("Digest = %s, %v; want %s", got, err, s.BuilderDigest)
	}
	// A lock ref that already carries a digest is followed by its tag.
	if got, err := r.Digest(ctx, "docker.io/library/ubuntu:24.04@sha256:"+strings.Repeat("0", 64)); err != nil || got != s.BuilderDigest {
		t.Errorf("tag+digest ref: %s, %v; want %s", got, err, s.BuilderDigest)
	}
	// A patched base image (the tag moved) shows up as a new digest.
	moved := s.PushBase(t, "docker.io/library/ubuntu:24.04")
	if got, err := r.Digest(ctx, "docker.io/library/ubuntu:24.04"); err != nil || got != moved || moved == s.BuilderDigest {
		t.Errorf("after the tag moved: %s, %v; want %s", got, err, moved)
	}
	if _, err := r.Digest(ctx, "docker.io/library/ubuntu:does-not-exist"); err == nil || !strings.Contains(err.Error(), "library/ubuntu:does-not-exist") {
		t.Errorf("missing tag: err = %v, want one naming the reference", err)
	}
	if _, err := r.Digest(ctx, "docker.io/library/ubuntu@sha256:"+strings.Repeat("0", 64)+"x"); err == nil {
		t.Error("a malformed reference was accepted")
	}
}
