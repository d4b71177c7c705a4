// Package standin makes a stand-in for gcr.io/distroless/base-nossl-debian13:nonroot from
// a Debian archive, for machines that cannot pull it (air-gapped, or only a Debian mirror
// in reach; `ci base` and the tests through pipeline/testsupport/basetest): the same file
// set, made from the same Debian trixie packages, with the same users and no shell.
//
// distroless base-nossl is "static" (base-files, netbase, tzdata, media-types, the
// ca-certificates bundle, passwd/group with root, nobody and nonroot) plus glibc (libc6).
// The .debs are fetched with apt-get download through a private apt configuration
// (its own sources list, state and cache directories), so the Debian 12 host's apt state
// is never touched and nothing is installed on it. They are unpacked with dpkg-deb -x
// (no maintainer scripts run: distroless does not run them either).
//
// The unpacked root filesystem is cached under CacheDir, keyed by the exact package
// versions, so only the first run on a machine downloads (~3.5 MB) and unpacks.
package standin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/nginx-forge/nginx-forge/pipeline/image"
	"github.com/nginx-forge/nginx-forge/pipeline/internal/toolbox"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
)

// DefaultCacheDir holds the private apt state and the unpacked root filesystems.
const DefaultCacheDir = "/var/cache/nginx-forge/base"

// Name is what the stand-in pretends to be (used as org.opencontainers.image.base.name
// by callers that want it).
const Name = "gcr.io/distroless/base-nossl-debian13:nonroot"

// recipe changes whenever the way the rootfs is made changes, so a cached rootfs made
// by older code is not reused. (It keeps the name it had as test code: the caches the
// tests filled stay valid.)
const recipe = "basetest-4"

// Packages are the Debian packages distroless base-nossl-debian13 is made of.
var Packages = []string{"base-files", "ca-certificates", "libc6", "media-types", "netbase", "tzdata"}

// Options say where and how to build.
type Options struct {
	// CacheDir defaults to DefaultCacheDir.
	CacheDir string
	// Mirror is the Debian archive (required: "http://HOST/debian", a mirror or a
	// local copy served over http).
	Mirror string
	// Suite defaults to trixie (Debian 13, what distroless -debian13 is built from).
	Suite string
	// Arch is the Debian architecture; default amd64.
	Arch string
	// NoLibc leaves glibc out: an image that cannot run a dynamically linked binary, for
	// tests proving the smoke checks catch it.
	NoLibc bool
	// Progress receives apt's and the cache's steps as Detail notes; nil discards.
	Progress progress.Sink
	// MaxListAge is how old the cached package lists may get before apt-get update runs
	// again; default 24h. The lists decide the versions, hence the cache key.
	MaxListAge time.Duration
}

// Defaults fills the options left zero.
func (o *Options) Defaults() {
	if o.CacheDir == "" {
		o.CacheDir = DefaultCacheDir
	}
	if o.Suite == "" {
		o.Suite = "trixie"
	}
	if o.Arch == "" {
		o.Arch = "amd64"
	}
	if o.Progress == nil {
		o.Progress = progress.Discard
	}
	if o.MaxListAge == 0 {
		o.MaxListAge = 24 * time.Hour
	}
}

// CheckMirror refuses a missing or malformed Mirror, naming the fix.
func (o *Options) CheckMirror() error {
	if o.Mirror == "" {
		return errors.New("no Debian mirror given: name the Debian archive, such as http://HOST/debian (the one in /etc/apt/sources.list will do)")
	}
	u, err := url.Parse(o.Mirror)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("Debian mirror %q is not an http(s) URL such as http://HOST/debian", o.Mirror)
	}
	o.Mirror = strings.TrimSuffix(o.Mirror, "/")
	return nil
}

// Rootfs is an unpacked base root filesystem.
type Rootfs struct {
	// Dir is the root directory. It is shared through the cache: never modify it.
	Dir string
	// Versions maps each package to its Debian version.
	Versions map[string]string
	// Key identifies the rootfs: a hash of the recipe and the package versions.
	Key string
}

// Build returns the cached rootfs for the current package versions, making it first if
// needed. Concurrent callers (test packages run in parallel, ci base) are serialised by
// a file lock in the cache directory.
func Build(ctx context.Context, o Options) (*Rootfs, error) {
	o.Defaults()
	if err := o.CheckMirror(); err != nil {
		return nil, err
	}
	unlock, err := LockCache(o.CacheDir)
	if err != nil {
		return nil, err
	}
	defer unlock()

	a := aptDir{root: filepath.Join(o.CacheDir, "apt-"+o.Suite+"-"+o.Arch), o: o}
	if err := a.update(ctx); err != nil {
		return nil, err
	}
	pkgs := append([]string(nil), Packages...)
	if o.NoLibc {
		pkgs = without(pkgs, "libc6")
	}
	versions, err := a.versions(ctx, pkgs)
	if err != nil {
		return nil, err
	}
	key := cacheKey(o, versions)
	dest := filepath.Join(o.CacheDir, key)
	if _, err := os.Stat(filepath.Join(dest, "packages.txt")); err == nil {
		o.Progress.Send(progress.Detailf("base rootfs %s (cached)", dest))
		return &Rootfs{Dir: filepath.Join(dest, "rootfs"), Versions: versions, Key: key}, nil
	}
	o.Progress.Send(progress.Detailf("making base rootfs %s from %s", dest, strings.Join(sortedPairs(versions), " ")))
	tmp, err := os.MkdirTemp(o.CacheDir, ".build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	debs := filepath.Join(tmp, "debs")
	if err := os.Mkdir(debs, 0o755); err != nil {
		return nil, err
	}
	pinned := make([]string, 0, len(pkgs))
	for _, p := range pkgs {
		pinned = append(pinned, p+"="+versions[p])
	}
	if err := a.run(ctx, debs, "apt-get", append([]string{"download"}, pinned...)...); err != nil {
		return nil, fmt.Errorf("downloading %s from %s %s: %w", strings.Join(pinned, " "), o.Mirror, o.Suite, err)
	}
	root := filepath.Join(tmp, "out", "rootfs")
	if err := makeRootfs(ctx, debs, root); err != nil {
		return nil, err
	}
	var list bytes.Buffer
	for _, p := range sortedPairs(versions) {
		fmt.Fprintln(&list, p)
	}
	if err := os.WriteFile(filepath.Join(tmp, "out", "packages.txt"), list.Bytes(), 0o644); err != nil {
		return nil, err
	}
	// The rename publishes the finished rootfs at once: a crash never leaves a half
	// made one under the key.
	if err := os.Rename(filepath.Join(tmp, "out"), dest); err != nil {
		return nil, fmt.Errorf("publishing base rootfs %s: %w", dest, err)
	}
	return &Rootfs{Dir: filepath.Join(dest, "rootfs"), Versions: versions, Key: key}, nil
}

// Image turns a rootfs into a single-layer OCI image configured like distroless's
// :nonroot images (user 65532, working directory /home/nonroot, PATH and SSL_CERT_FILE).
// The same rootfs always gives the same digest.
func Image(r *Rootfs, arch string) (v1.Image, error) {
	if arch == "" {
		arch = "amd64"
	}
	// distroless stamps its layers at the epoch; so does the stand-in.
	epoch := time.Unix(0, 0).UTC()
	layer, err := image.TreeLayer(r.Dir, image.WithModTime(epoch),
		image.WithOwners(map[string]image.Owner{"home/nonroot": image.Nonroot}))
	if err != nil {
		return nil, fmt.Errorf("making the base layer: %w", err)
	}
	return SingleLayerImage(layer, arch, v1.Time{Time: epoch}, v1.History{
		Created:   v1.Time{Time: epoch},
		CreatedBy: "nginx-forge basetest: " + strings.Join(sortedPairs(r.Versions), " "),
		Comment:   "stand-in for " + Name,
	}, v1.Config{
		User:       "65532",
		WorkingDir: "/home/nonroot",
		Env: []string{
			"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
			"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
		},
	})
}

// SingleLayerImage is an OCI image for linux/arch made of layer alone, with the given
// creation time, history entry and container config.
func SingleLayerImage(layer v1.Layer, arch string, created v1.Time, h v1.History, config v1.Config) (v1.Image, error) {
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err := mutate.Append(img, mutate.Addendum{Layer: layer, MediaType: types.OCILayer, History: h})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = arch, "linux"
	if arch == "arm64" {
		// As distroless's arm64 images (and the OCI image spec's platform list) name it.
		cf.Variant = "v8"
	}
	cf.Created = created
	cf.Config = config
	return mutate.ConfigFile(img, cf)
}

// Push writes img to ref (a tag or repository) and returns its digest reference.
func Push(ctx context.Context, img v1.Image, ref string, opts ...remote.Option) (name.Digest, error) {
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return name.Digest{}, fmt.Errorf("parsing reference %q: %w", ref, err)
	}
	opts = append([]remote.Option{remote.WithContext(ctx)}, opts...)
	if err := remote.Write(r, img, opts...); err != nil {
		return name.Digest{}, fmt.Errorf("pushing the base image to %s: %w", r, err)
	}
	d, err := img.Digest()
	if err != nil {
		return name.Digest{}, err
	}
	return r.Context().Digest(d.String()), nil
}

// makeRootfs unpacks the .debs in debs into root and adds what distroless adds.
func makeRootfs(ctx context.Context, debs, root string) error {
	files, err := filepath.Glob(filepath.Join(debs, "*.deb"))
	if err != nil {
		return err
	}
	sort.Strings(files)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	certs := filepath.Join(filepath.Dir(root), "ca-certificates")
	for _, f := range files {
		if err := unpackDeb(ctx, f, root, certs); err != nil {
			return err
		}
	}
	if err := installCertBundle(certs, root); err != nil {
		return err
	}
	if err := pruneDocs(root); err != nil {
		return err
	}
	if err := writeUsers(root); err != nil {
		return err
	}
	return checkNoShell(root)
}

// unpackDeb unpacks the package file f into root (ca-certificates into certs, aside) and
// records its control stanza.
func unpackDeb(ctx context.Context, f, root, certs string) error {
	dest := root
	// Only the bundle of ca-certificates goes in (distroless ships the bundle,
	// not the update-ca-certificates machinery): unpack it aside.
	if strings.HasPrefix(filepath.Base(f), "ca-certificates_") {
		dest = certs
	}
	if out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", f, dest).CombinedOutput(); err != nil {
		return fmt.Errorf("dpkg-deb -x %s: %w: %s", f, err, out)
	}
	// distroless records each package's control stanza in var/lib/dpkg/status.d/NAME
	// (scanners and the glibc check read it); so does the stand-in.
	control, err := exec.CommandContext(ctx, "dpkg-deb", "-f", f).Output()
	if err != nil {
		return fmt.Errorf("dpkg-deb -f %s: %w", f, err)
	}
	pkg := strings.SplitN(filepath.Base(f), "_", 2)[0]
	stanza := "Package: " + pkg + "\nStatus: install ok installed\n" + strings.TrimPrefix(string(control), "Package: "+pkg+"\n")
	return writeFile(filepath.Join(root, "var/lib/dpkg/status.d", pkg), []byte(stanza), 0o644)
}

// installCertBundle writes the CA bundle of the ca-certificates unpacked in certs (if any)
// into root, with its copyright.
func installCertBundle(certs, root string) error {
	if _, err := os.Stat(certs); err != nil {
		return nil
	}
	if err := writeBundle(certs, filepath.Join(root, "etc/ssl/certs/ca-certificates.crt")); err != nil {
		return err
	}
	// ca-certificates' copyright is the licence of the bundle; keep it like every
	// other package's.
	if b, err := os.ReadFile(filepath.Join(certs, "usr/share/doc/ca-certificates/copyright")); err == nil {
		return writeFile(filepath.Join(root, "usr/share/doc/ca-certificates/copyright"), b, 0o644)
	}
	return nil
}

// pruneDocs removes documentation other than copyright files, and the login/motd scripts
// of base-files (which need a shell the image does not have): distroless has neither.
func pruneDocs(root string) error {
	for _, p := range []string{"usr/share/man", "usr/share/info", "usr/share/lintian", "etc/update-motd.d", "etc/profile.d", "etc/profile", "etc/bash.bashrc", "etc/skel"} {
		if err := os.RemoveAll(filepath.Join(root, p)); err != nil {
			return err
		}
	}
	docs, _ := os.ReadDir(filepath.Join(root, "usr/share/doc"))
	for _, d := range docs {
		dd := filepath.Join(root, "usr/share/doc", d.Name())
		entries, _ := os.ReadDir(dd)
		for _, e := range entries {
			if e.Name() != "copyright" {
				if err := os.RemoveAll(filepath.Join(dd, e.Name())); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// writeUsers writes distroless's users, groups and name service switch, and the home and
// scratch directories with their modes.
func writeUsers(root string) error {
	for p, content := range map[string]string{
		"etc/passwd": "root:x:0:0:root:/root:/sbin/nologin\n" +
			"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
			"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n",
		"etc/group": "root:x:0:\n" +
			"tty:x:5:\n" +
			"staff:x:50:\n" +
			"nogroup:x:65534:\n" +
			"nonroot:x:65532:\n",
		"etc/nsswitch.conf": "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\nnetworks: files\nprotocols: files\nservices: files\nethers: files\nrpc: files\n",
	} {
		if err := writeFile(filepath.Join(root, p), []byte(content), 0o644); err != nil {
			return err
		}
	}
	for p, mode := range map[string]fs.FileMode{"tmp": 0o777 | fs.ModeSticky, "home/nonroot": 0o700, "root": 0o700} {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(full, 0o755); err != nil {
			return err
		}
		if err := os.Chmod(full, mode); err != nil {
			return err
		}
	}
	return nil
}

// checkNoShell fails if the rootfs has a shell: the stand-in must be as shell-less as
// distroless, or the smoke test "the image has no shell" would prove nothing.
func checkNoShell(root string) error {
	for _, sh := range []string{"bin/sh", "bin/bash", "bin/dash", "usr/bin/sh", "usr/bin/bash", "usr/bin/dash", "bin/busybox", "usr/bin/busybox"} {
		if _, err := os.Lstat(filepath.Join(root, sh)); err == nil {
			return fmt.Errorf("base rootfs %s has a shell (%s); distroless has none", root, sh)
		}
	}
	return nil
}

// writeBundle concatenates the certificates the way update-ca-certificates would with
// the default configuration (every certificate shipped under mozilla/), in name order.
func writeBundle(certs, dest string) error {
	crts, err := filepath.Glob(filepath.Join(certs, "usr/share/ca-certificates/mozilla/*.crt"))
	if err != nil {
		return err
	}
	if len(crts) == 0 {
		return errors.New("ca-certificates package has no certificates under usr/share/ca-certificates/mozilla")
	}
	sort.Strings(crts)
	var b bytes.Buffer
	for _, c := range crts {
		data, err := os.ReadFile(c)
		if err != nil {
			return err
		}
		b.Write(data)
		if !bytes.HasSuffix(data, []byte("\n")) {
			b.WriteByte('\n')
		}
	}
	return writeFile(dest, b.Bytes(), 0o644)
}

func writeFile(p string, data []byte, mode fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, data, mode)
}

func cacheKey(o Options, versions map[string]string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%s\n%s\n", recipe, o.Mirror, o.Suite, o.Arch)
	for _, p := range sortedPairs(versions) {
		fmt.Fprintln(h, p)
	}
	return o.Suite + "-" + o.Arch + "-" + hex.EncodeToString(h.Sum(nil))[:16]
}

func sortedPairs(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

func without(list []string, drop string) []string {
	var out []string
	for _, s := range list {
		if s != drop {
			out = append(out, s)
		}
	}
	return out
}

// LockCache creates the cache directory if needed and takes its file lock, serialising
// the test packages that make or read the stand-ins at the same time.
func LockCache(dir string) (func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating base cache %s: %w", dir, err)
	}
	// Not cancellable (context.Background): the kernel queues the waiters.
	unlock, err := toolbox.Lock(context.Background(), filepath.Join(dir, ".lock"))
	if err != nil {
		return nil, fmt.Errorf("locking base cache %s: %w", dir, err)
	}
	return unlock, nil
}
