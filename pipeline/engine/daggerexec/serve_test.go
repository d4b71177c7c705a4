package daggerexec

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"

	"github.com/nginx-forge/nginx-forge/pipeline/smoke"
)

// The Dagger target is a smoke.Target: the same suite runs against it.
var _ smoke.Target = (*Target)(nil)

// TestWriteOCITarball: what Serve hands to Container.Import unpacks to an OCI layout holding
// exactly the image (same digest).
func TestWriteOCITarball(t *testing.T) {
	img, err := random.Image(1024, 2)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tarPath := filepath.Join(dir, "image.oci")
	if err := writeOCITarball(tarPath, filepath.Join(dir, "layout"), img); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "layout")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the layout directory was left behind: %v", err)
	}

	out := filepath.Join(dir, "unpacked")
	f, err := os.Open(tarPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	names := map[string]bool{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names[h.Name] = true
		if strings.HasPrefix(h.Name, "/") || strings.Contains(h.Name, "..") {
			t.Fatalf("unsafe tar entry %q", h.Name)
		}
		p := filepath.Join(out, h.Name)
		if h.Typeflag == tar.TypeDir {
			os.MkdirAll(p, 0o755)
			continue
		}
		os.MkdirAll(filepath.Dir(p), 0o755)
		b, _ := io.ReadAll(tr)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"oci-layout", "index.json"} {
		if !names[want] {
			t.Errorf("tarball lacks %s at its top (have %v)", want, names)
		}
	}
	idx, err := layout.ImageIndexFromPath(out)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := img.Digest()
	if len(m.Manifests) != 1 || m.Manifests[0].Digest != want {
		t.Fatalf("layout index = %+v, want the one image %s", m.Manifests, want)
	}
	got, err := idx.Image(want)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := got.Layers()
	if err != nil || len(layers) != 2 {
		t.Fatalf("image from the tarball has %d layers (%v), want 2", len(layers), err)
	}
}

// TestWaitHTTP: readiness is an HTTP answer of any status; a tunnel that ends or a port that
// never answers fails with the reason, not after the full timeout.
func TestWaitHTTP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNotFound) }))
	defer srv.Close()
	if err := waitHTTP(context.Background(), srv.Listener.Addr().String(), 5*time.Second, nil); err != nil {
		t.Errorf("waitHTTP on a live server: %v", err)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	ended := make(chan struct{})
	close(ended)
	start := time.Now()
	err = waitHTTP(context.Background(), dead, time.Minute, ended)
	if err == nil || !strings.Contains(err.Error(), "tunnel ended") || time.Since(start) > 5*time.Second {
		t.Errorf("waitHTTP with an ended tunnel = %v after %v", err, time.Since(start))
	}
	err = waitHTTP(context.Background(), dead, time.Second, nil)
	if err == nil || !strings.Contains(err.Error(), dead) {
		t.Errorf("waitHTTP on a dead port = %v, want a timeout naming %s", err, dead)
	}
}

// TestSmokePreparesTLSFromTheImage: Smoke reads the tls.conf documented in the image's own
// nginx.conf before it needs the engine; an image without one is refused with its path.
func TestSmokePreparesTLSFromTheImage(t *testing.T) {
	p, _ := lockPlan(t)
	noEngineEnv(t, t.TempDir())
	final, _ := p.Stage(p.Final)
	var conf []byte
	for _, f := range final.Files {
		if filepath.Base(f.Path) == "nginx.conf" {
			conf = f.Data
		}
	}
	if conf == nil {
		t.Fatal("the plan ships no nginx.conf")
	}
	layer, err := crane.Layer(map[string][]byte{nginxConf: conf})
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	_, err = New().Smoke(context.Background(), p, img, smoke.Options{})
	if !errors.Is(err, ErrNoEngine) {
		t.Errorf("Smoke of an image with the shipped nginx.conf = %v; want to get as far as the engine (ErrNoEngine here)", err)
	}
	_, err = New().Smoke(context.Background(), p, empty.Image, smoke.Options{})
	if err == nil || !strings.Contains(err.Error(), "has no "+nginxConf) {
		t.Errorf("Smoke of an image without nginx.conf = %v", err)
	}
}

// TestTargetUnsupported: what a Dagger service cannot give is ErrUnsupported (a skipped
// check with the reason), never an empty success.
func TestTargetUnsupported(t *testing.T) {
	var tg Target
	ctx := context.Background()
	if _, err := tg.ListenPacket(ctx, "udp", "127.0.0.1:0"); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("ListenPacket = %v, want ErrUnsupported", err)
	}
	if _, err := tg.ProcStatus(ctx); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("ProcStatus = %v, want ErrUnsupported", err)
	}
	if _, err := tg.MountInfo(ctx); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("MountInfo = %v, want ErrUnsupported", err)
	}
	if exited, _ := tg.Exited(); exited {
		t.Error("a target whose tunnel never ended reports Exited")
	}
}
