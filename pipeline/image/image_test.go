package image

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image config (user, entrypoint, ports, stop signal, labels, history) and the
// manifest annotations must not drift silently: they are the runtime contract other
// people's deployments depend on.
func TestAssembleConfigGolden(t *testing.T) {
	img := assembleSynthetic(t, "amd64")
	raw, err := img.RawConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "config.golden.json", indent(t, raw))
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	anns, _ := json.MarshalIndent(m.Annotations, "", "  ")
	golden(t, "annotations.golden.json", append(anns, '\n'))

	cf, _ := img.ConfigFile()
	c := cf.Config
	if c.User != "65532:65532" || strings.Join(c.Entrypoint, " ") != "/usr/sbin/nginx -g daemon off;" ||
		c.StopSignal != "SIGQUIT" || c.WorkingDir != "/" || len(c.Cmd) != 0 {
		t.Errorf("runtime contract broken: %+v", c)
	}
	for _, p := range []string{"8080/tcp", "8443/tcp", "8443/udp"} {
		if _, ok := c.ExposedPorts[p]; !ok {
			t.Errorf("port %s not exposed", p)
		}
	}
	if got := cf.Created.Unix(); got != testLock(t).SourceDateEpoch {
		t.Errorf("created %d, want SOURCE_DATE_EPOCH %d", got, testLock(t).SourceDateEpoch)
	}
	if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type %s", mt)
	}
	for k, want := range map[string]string{
		"org.opencontainers.image.version":     "1.26.3",
		"org.opencontainers.image.created":     "2025-02-24T00:00:00Z",
		"org.opencontainers.image.base.name":   "gcr.io/distroless/base-nossl-debian13:nonroot",
		"dev.nginx-forge.openssl.version":      "3.5.7",
		"dev.nginx-forge.openssl.sha256":       "a8c0d28a529ca480f9f36cf5792e2cd21984552a3c8e4aa11a24aa31aeac98e8",
		"dev.nginx-forge.libcrypt.version":     "1:4.4.33-2",
		"org.opencontainers.image.revision":    "0123456789abcdef0123456789abcdef01234567",
		"org.opencontainers.image.source":      forkSource,
		"org.opencontainers.image.base.digest": "",
	} {
		got := m.Annotations[k]
		if want == "" && strings.HasPrefix(got, "sha256:") {
			continue
		}
		if got != want || c.Labels[k] != want {
			t.Errorf("annotation %s = %q, label %q; want %q", k, got, c.Labels[k], want)
		}
	}
}

// The layer: fixed timestamps, root-owned, writable dirs owned by 65532, normalised modes.
func TestAssembleLayerEntries(t *testing.T) {
	img := assembleSynthetic(t, "amd64")
	hs := layerEntries(t, img)
	epoch := testLock(t).SourceDateEpoch
	for name, h := range hs {
		if h.ModTime.Unix() != epoch {
			t.Errorf("%s mtime %v, want SOURCE_DATE_EPOCH", name, h.ModTime)
		}
		wantOwner := 0
		if name == "var/cache/nginx" || name == "run/nginx" {
			wantOwner = 65532
		}
		if h.Uid != wantOwner || h.Gid != wantOwner || h.Uname != "" || h.Gname != "" {
			t.Errorf("%s owned by %d:%d (%q:%q), want %d:%d", name, h.Uid, h.Gid, h.Uname, h.Gname, wantOwner, wantOwner)
		}
	}
	for name, mode := range map[string]int64{"usr/sbin/nginx": 0o755, "etc/nginx/nginx.conf": 0o644, "var/cache/nginx": 0o755, "etc/nginx/default.conf": 0o777, "usr": 0o755} {
		if h, ok := hs[name]; !ok {
			t.Errorf("layer lacks %s", name)
		} else if h.Mode != mode {
			t.Errorf("%s mode %o, want %o", name, h.Mode, mode)
		}
	}
	if h := hs["etc/nginx/default.conf"]; h != nil && h.Linkname != "nginx.conf" {
		t.Errorf("symlink target %q", h.Linkname)
	}
}

// Same lock, same tree content => same digest, even when the tree was rebuilt with other
// mtimes, a different umask and a different creation order.
func TestAssembleReproducible(t *testing.T) {
	l := testLock(t)
	base := syntheticBase(t, "amd64")
	a, err := Assemble(base, syntheticTree(t, time.Unix(1, 0), 0, false), l)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Assemble(base, syntheticTree(t, time.Now(), 0o022, true), l)
	if err != nil {
		t.Fatal(err)
	}
	da, _ := a.Digest()
	db, _ := b.Digest()
	if da != db {
		t.Fatalf("same inputs, different digests: %s vs %s", da, db)
	}
	sa, err := SBOM(a, l)
	if err != nil {
		t.Fatal(err)
	}
	sb, _ := SBOM(b, l)
	if string(sa) != string(sb) {
		t.Error("same image, different SBOMs")
	}
	// And a content change does change it.
	tree := syntheticTree(t, time.Unix(1, 0), 0, false)
	os.WriteFile(filepath.Join(tree, "etc/nginx/nginx.conf"), []byte("changed\n"), 0o644)
	c, err := Assemble(base, tree, l)
	if err != nil {
		t.Fatal(err)
	}
	if dc, _ := c.Digest(); dc == da {
		t.Error("changed nginx.conf, same digest")
	}
}

func TestAssembleRejectsBrokenTree(t *testing.T) {
	l := testLock(t)
	base := syntheticBase(t, "amd64")
	for _, tc := range []struct {
		name   string
		break_ func(dir string)
		want   string
	}{
		{"no nginx", func(d string) { os.Remove(filepath.Join(d, "usr/sbin/nginx")) }, "usr/sbin/nginx"},
		{"nginx not executable", func(d string) { os.Chmod(filepath.Join(d, "usr/sbin/nginx"), 0o644) }, "usr/sbin/nginx"},
		{"no writable dir", func(d string) { os.RemoveAll(filepath.Join(d, "run/nginx")) }, "run/nginx"},
		{"device file", func(d string) {
			os.Symlink("x", filepath.Join(d, "ok"))
			if err := mkfifo(filepath.Join(d, "etc/nginx/fifo")); err != nil {
				t.Skip(err)
			}
		}, "etc/nginx/fifo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := syntheticTree(t, time.Unix(1, 0), 0, false)
			tc.break_(dir)
			_, err := Assemble(base, dir, l)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error naming %s", err, tc.want)
			}
		})
	}
	if _, err := Assemble(base, filepath.Join(t.TempDir(), "missing"), l); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing tree: %v", err)
	}
}

// The SBOM is SPDX 2.3 with every component, its checksum and licence, libcrypt, the base
// and the base's Debian packages; the golden file pins its exact shape.
func TestSBOMGolden(t *testing.T) {
	l := testLock(t)
	img := assembleOn(t, syntheticDebianBase(t, "amd64"))
	doc, err := SBOM(img, l)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "sbom.golden.spdx.json", doc)

	parsed := parseSBOM(t, doc)
	byName := packagesByName(parsed)
	for _, c := range builtComponents(l, options{}) {
		p, ok := byName[c.Name]
		if !ok {
			t.Errorf("SBOM lacks %s", c.Name)
			continue
		}
		if p.PackageVersion != c.Version || p.PackageDownloadLocation != c.URL || len(p.PackageChecksums) != 1 || p.PackageChecksums[0].Value != c.SHA256 || p.PackageLicenseDeclared == "NOASSERTION" {
			t.Errorf("SBOM package %s = %+v", c.Name, p)
		}
	}
	if p := byName["libcrypt"]; p.PackageVersion != "1:4.4.33-2" {
		t.Errorf("SBOM libcrypt = %+v", p)
	}
	if p := byName["gcr.io/distroless/base-nossl-debian13:nonroot"]; !strings.HasPrefix(p.PackageVersion, "sha256:") {
		t.Errorf("SBOM base = %+v", p)
	}
	d, _ := img.Digest()
	if parsed.SPDXVersion != "SPDX-2.3" || !strings.HasSuffix(parsed.DocumentNamespace, d.Hex) || parsed.CreationInfo.Created != "2025-02-24T00:00:00Z" {
		t.Errorf("SBOM header: %s %s %s", parsed.SPDXVersion, parsed.DocumentNamespace, parsed.CreationInfo.Created)
	}
}

// The OCI layout holds the image (named) and the SBOM artifact referring to it, and the
// SBOM is also beside it.
func TestWriteLayout(t *testing.T) {
	l := testLock(t)
	img := assembleSynthetic(t, "amd64")
	doc, err := SBOM(img, l)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "out")
	created := time.Unix(l.SourceDateEpoch, 0)
	if err := writeLayout(dir, img, "1.26.3", doc, created); err != nil {
		t.Fatal(err)
	}
	// Writing again over the earlier layout is allowed and gives the same index.json.
	first, _ := os.ReadFile(filepath.Join(dir, "index.json"))
	if err := writeLayout(dir, img, "1.26.3", doc, created); err != nil {
		t.Fatal(err)
	}
	second, _ := os.ReadFile(filepath.Join(dir, "index.json"))
	if string(first) != string(second) {
		t.Errorf("index.json differs between two writes:\n%s\n%s", first, second)
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, _ := idx.IndexManifest()
	if len(im.Manifests) != 2 {
		t.Fatalf("index.json lists %d manifests, want image + SBOM", len(im.Manifests))
	}
	want, _ := img.Digest()
	if im.Manifests[0].Digest != want || im.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "1.26.3" {
		t.Errorf("first entry %+v, want the image %s named 1.26.3", im.Manifests[0], want)
	}
	art, err := idx.Image(im.Manifests[1].Digest)
	if err != nil {
		t.Fatal(err)
	}
	am, _ := art.Manifest()
	if am.Subject == nil || am.Subject.Digest != want || am.ArtifactType != sbomArtifactType {
		t.Errorf("SBOM artifact manifest %+v", am)
	}
	got, err := readSBOM(art)
	if err != nil || string(got) != string(doc) {
		t.Errorf("SBOM in layout differs (%v)", err)
	}
	beside, err := os.ReadFile(dir + ".spdx.json")
	if err != nil || string(beside) != string(doc) {
		t.Errorf("SBOM beside the layout: %v", err)
	}
	// The image read back from the layout is the same image.
	back, err := idx.Image(want)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := back.Digest(); d != want {
		t.Errorf("layout image digest %s, want %s", d, want)
	}
	// A directory with other content is refused.
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "notes.txt"), []byte("x"), 0o644)
	if err := writeLayout(other, img, "", nil, created); err == nil || !strings.Contains(err.Error(), "neither empty nor an OCI layout") {
		t.Errorf("non-layout dir: %v", err)
	}
}

func TestDefaultTags(t *testing.T) {
	l := testLock(t)
	if got := strings.Join(Tags(l, TagEvent{Latest: false}), " "); got != "1.26.3 1.26.3-openssl3.5.7-pcre2-10.46-zlib1.3.1 1.26" {
		t.Errorf("DefaultTags = %s", got)
	}
	if got := Tags(l, TagEvent{Latest: true}); got[len(got)-1] != "latest" || len(got) != 5 {
		t.Errorf("DefaultTags(latest) = %v", got)
	}
}

// A .tar output is a docker-loadable tarball holding the same image.
func TestWriteOutputTarball(t *testing.T) {
	l := testLock(t)
	img := assembleSynthetic(t, "amd64")
	doc, _ := SBOM(img, l)
	p := filepath.Join(t.TempDir(), "nginx.tar")
	if err := WriteOutput(p, img, "ghcr.io/nginx-forge/nginx:1.26.3", doc, time.Unix(l.SourceDateEpoch, 0)); err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag("ghcr.io/nginx-forge/nginx:1.26.3")
	back, err := tarball.ImageFromPath(p, &tag)
	if err != nil {
		t.Fatal(err)
	}
	// The tarball stores config and layers; the manifest is rebuilt on load, so compare
	// what must survive: the config and the layer digests.
	wantCfg, _ := img.ConfigName()
	gotCfg, _ := back.ConfigName()
	if wantCfg != gotCfg {
		t.Errorf("config %s, want %s", gotCfg, wantCfg)
	}
	if b, err := os.ReadFile(p + ".spdx.json"); err != nil || string(b) != string(doc) {
		t.Errorf("SBOM beside the tarball: %v", err)
	}
	// Any other path is an OCI layout named by the tag.
	dir := filepath.Join(t.TempDir(), "layout")
	if err := WriteOutput(dir, img, "ghcr.io/nginx-forge/nginx:1.26.3", nil, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	idx, _ := os.ReadFile(filepath.Join(dir, "index.json"))
	if !strings.Contains(strings.Join(strings.Fields(string(idx)), ""), `"org.opencontainers.image.ref.name":"1.26.3"`) {
		t.Errorf("layout index.json: %s", idx)
	}
}
