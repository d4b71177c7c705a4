package image

import (
	"archive/tar"
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// diffFile is one entry of a test layer.
type diffFile struct {
	name, body string
	mode       int64
	uid        int
	mtime      int64
}

func diffLayer(t *testing.T, files []diffFile) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, Uid: f.uid, Size: int64(len(f.body)), ModTime: time.Unix(f.mtime, 0), Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, f.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func diffImage(t *testing.T, layers ...[]diffFile) v1.Image {
	t.Helper()
	img := empty.Image
	for _, files := range layers {
		var err error
		if img, err = mutate.AppendLayers(img, diffLayer(t, files)); err != nil {
			t.Fatal(err)
		}
	}
	return img
}

// TestFirstDifference names the first layer and file that differ and how, for each way a
// rebuild can differ, and nothing for the same image.
func TestFirstDifference(t *testing.T) {
	base := []diffFile{{name: "etc/os-release", body: "ID=debian\n", mode: 0o644, mtime: 1}}
	tree := []diffFile{
		{name: "usr/sbin/nginx", body: "binary", mode: 0o755, mtime: 1},
		{name: "etc/nginx/nginx.conf", body: "events {}", mode: 0o644, mtime: 1},
	}
	with := func(files []diffFile, i int, change func(*diffFile)) []diffFile {
		out := append([]diffFile{}, files...)
		change(&out[i])
		return out
	}
	published := diffImage(t, base, tree)
	if d, differ, err := FirstDifference(published, diffImage(t, base, tree)); err != nil || differ {
		t.Fatalf("the same image: differ %v (%s), err %v", differ, d, err)
	}
	cases := []struct {
		rebuilt v1.Image
		want    string
	}{
		{diffImage(t, base, with(tree, 1, func(f *diffFile) { f.body = "events { }" })), "layer 2 of 2, file /etc/nginx/nginx.conf: content differs"},
		{diffImage(t, base, with(tree, 0, func(f *diffFile) { f.mode = 0o775 })), "layer 2 of 2, file /usr/sbin/nginx: mode differs (published 0755, rebuilt 0775)"},
		{diffImage(t, base, with(tree, 0, func(f *diffFile) { f.mtime = 1796601600 })), "layer 2 of 2, file /usr/sbin/nginx: mtime differs (published 1, rebuilt 1796601600)"},
		{diffImage(t, base, with(tree, 1, func(f *diffFile) { f.uid = 65532 })), "layer 2 of 2, file /etc/nginx/nginx.conf: owner differs (published 0:0, rebuilt 65532:0)"},
		{diffImage(t, with(base, 0, func(f *diffFile) { f.mtime = 2 }), tree), "layer 1 of 2, file /etc/os-release: mtime differs"},
		{diffImage(t, base, tree[:1]), "layer 2 of 2, file /etc/nginx/nginx.conf: only in the published image"},
		{diffImage(t, base, append(append([]diffFile{}, tree...), diffFile{name: "build-date", body: "today", mode: 0o644})), "layer 2 of 2, file /build-date: only in the rebuilt image"},
		{diffImage(t, base), "layer 2 of 2: layer count differs"},
	}
	for _, c := range cases {
		d, differ, err := FirstDifference(published, c.rebuilt)
		if err != nil || !differ || !strings.Contains(d.String(), c.want) {
			t.Errorf("FirstDifference = %q (differ %v, err %v), want %q", d, differ, err, c.want)
		}
	}
	// Same layers, another config: the field is named.
	cf, err := published.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.Config.Labels = map[string]string{"org.opencontainers.image.revision": "other"}
	relabelled, err := mutate.ConfigFile(published, cf)
	if err != nil {
		t.Fatal(err)
	}
	if d, differ, err := FirstDifference(published, relabelled); err != nil || !differ || !strings.Contains(d.String(), "config differs in config.Labels") {
		t.Errorf("another label: %q (differ %v, err %v)", d, differ, err)
	}
}
