//go:build integration

package main

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/image"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/basetest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// ci base, as the README types it, makes the same image the tests build on (one digest),
// written where --runtime-image reads it from the line it prints.
func TestBaseIsTheTestsStandIn(t *testing.T) {
	testenv.Tool(t, "apt-get", "apt")
	testenv.Tool(t, "dpkg-deb", "dpkg")
	mirror, err := testenv.DebianMirror()
	if err != nil {
		testenv.Missing(t, "the Debian mirror of the apt sources ("+err.Error()+")", "set "+testenv.DebianMirrorEnv)
	}
	want, _ := basetest.For(t, basetest.Options{})
	wantDigest, err := want.Digest()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "base")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"base", "--mirror", mirror, "--output", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("ci base: exit %d: %s", code, stderr.String())
	}
	printed := strings.TrimSpace(stdout.String())
	if printed != "oci:"+out {
		t.Errorf("ci base printed %q, want oci:%s", printed, out)
	}
	src, err := image.ParseSource(printed)
	if err != nil {
		t.Fatal(err)
	}
	img, err := src.Image(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := img.Digest(); got != wantDigest {
		t.Errorf("ci base made %s, the tests' stand-in is %s", got, wantDigest)
	}
}

// A mirror that refuses connections is named, with what to check, and nothing is written.
func TestBaseUnreachableMirror(t *testing.T) {
	testenv.Tool(t, "apt-get", "apt")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // a port nothing listens on
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"base", "--mirror", "http://" + addr + "/debian", "--output", filepath.Join(dir, "base"), "--cache", filepath.Join(dir, "cache")}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "is the mirror reachable from here") || stdout.Len() != 0 {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 naming the mirror", code, stdout.String(), stderr.String())
	}
}
