// Package ocirun runs a container image for real on this machine, with Debian's runc and
// umoci, the way a hardened deployment would: as the image's (non-root) user, with a
// read-only root filesystem, tmpfs where the image writes, no capabilities, no terminal.
//
// An image (a v1.Image, or a reference pulled with go-containerregistry) is written as an
// OCI layout and unpacked with `umoci unpack` into a Bundle: a root filesystem plus the
// runtime configuration umoci derives from the image's config. Each container started from
// a bundle gets its own config.json (pointing at the shared, read-only rootfs) in its own
// directory, so one bundle can run the server and one-off commands (`nginx -t`) side by side.
//
// Networking: by default each container gets a fresh network namespace, in which runc
// brings up only the loopback interface. Nothing is published on the host, so parallel
// runs never fight over ports 8080/8443 and nothing outside the machine can reach them.
// The caller reaches the container through Container.DialContext and ListenPacket, which
// create their sockets inside the container's namespace (setns on a locked OS thread; a
// socket stays in the namespace it was created in). WithHostNetwork shares the host's
// namespace instead (then the image's exposed ports must be free, checked before start).
//
// Everything runc creates is removed: containers are stopped (the image's stop signal,
// then SIGKILL) and deleted, and Bundle.Close removes the unpacked files.
package ocirun

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/ocimedia"
	"github.com/nginx-forge/nginx-forge/pipeline/internal/registryauth"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
)

// runcRoot is runc's state directory for our containers (runc --root). It is not runc's
// default (/run/runc), so our containers never mix with anybody else's, and a leftover can
// be found with `runc --root /run/nginx-forge/runc list`.
const runcRoot = "/run/nginx-forge/runc"

// WithDir sets the directory under which Pull and Prepare make the bundle's directory
// (default os.TempDir()).
func WithDir(dir string) Option { return func(o *options) { o.dir = dir } }

// WithProgress sends the runc and umoci commands a bundle runs to sink as Detail notes
// (default: discarded).
func WithProgress(sink progress.Sink) Option { return func(o *options) { o.sink = sink } }

// Bundle is an unpacked image: a root filesystem and the runtime configuration for it.
type Bundle struct {
	dir      string
	sink     progress.Sink
	spec     map[string]any // umoci's config.json, as generated
	config   v1.Config      // the image's config
	digest   v1.Hash
	uid, gid int

	mu         sync.Mutex
	containers map[string]*Container
	closed     bool
}

// Pull fetches ref (tag or digest) from its registry, with the credentials of
// registryauth.Keychain (loopback registries are reached over plain HTTP, as
// go-containerregistry does for them), and prepares it like Prepare.
func Pull(ctx context.Context, ref string, opts ...Option) (*Bundle, error) {
	o := makeOptions(opts)
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, fmt.Errorf("parsing image reference %q: %w", ref, err)
	}
	o.sink.Send(progress.Detailf("pulling %s", r))
	img, err := remote.Image(r, remote.WithContext(ctx), remote.WithAuthFromKeychain(registryauth.Keychain()))
	if err != nil {
		return nil, fmt.Errorf("pulling image %q: %w", ref, err)
	}
	return Prepare(ctx, img, opts...)
}

// Prepare writes img as an OCI layout, unpacks it with umoci and returns the bundle. The
// caller must Close it.
func Prepare(ctx context.Context, img v1.Image, opts ...Option) (b *Bundle, err error) {
	o := makeOptions(opts)
	for _, tool := range []string{"runc", "umoci"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("preparing image: %s is not installed: apt-get install %s (or run .ci/install-deps)", tool, tool)
		}
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("preparing image: ocirun needs root (runc runs rootful containers and umoci unpacks with the image's owners)")
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading image config: %w", err)
	}
	digest, err := img.Digest()
	if err != nil {
		return nil, fmt.Errorf("computing image digest: %w", err)
	}
	// The digest above is the image's own (the one pulled); umoci, which unpacks only OCI
	// images, is given the same blobs under OCI media types: images from `docker build`
	// or BuildKit, and ones this tool pushed before it typed everything OCI, are not.
	if img, err = ocimedia.ToOCI(img); err != nil {
		return nil, fmt.Errorf("preparing image %s: %w", digest, err)
	}
	dir, err := os.MkdirTemp(o.dir, "ocirun-")
	if err != nil {
		return nil, fmt.Errorf("making bundle directory: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()

	// umoci reads an OCI layout and finds the image by its ref.name annotation.
	lay := filepath.Join(dir, "layout")
	p, err := layout.Write(lay, empty.Index)
	if err != nil {
		return nil, fmt.Errorf("writing OCI layout %s: %w", lay, err)
	}
	const tag = "ocirun"
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": tag})); err != nil {
		return nil, fmt.Errorf("writing image to OCI layout %s: %w", lay, err)
	}
	bundle := filepath.Join(dir, "bundle")
	o.sink.Send(progress.Detailf("umoci unpack --image %s:%s %s", lay, tag, bundle))
	if out, err := exec.CommandContext(ctx, "umoci", "unpack", "--image", lay+":"+tag, bundle).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("unpacking image with umoci: %w: %s", err, strings.TrimSpace(string(out)))
	}
	// The layout was only umoci's input; the rootfs is what runs.
	if err := os.RemoveAll(lay); err != nil {
		return nil, fmt.Errorf("removing OCI layout: %w", err)
	}
	raw, err := os.ReadFile(filepath.Join(bundle, "config.json"))
	if err != nil {
		return nil, fmt.Errorf("reading umoci's runtime config: %w", err)
	}
	var spec map[string]any
	if err := json.Unmarshal(raw, &spec); err != nil {
		return nil, fmt.Errorf("parsing umoci's runtime config: %w", err)
	}
	uid, gid, err := specUser(spec)
	if err != nil {
		return nil, err
	}
	return &Bundle{
		dir:        dir,
		sink:       o.sink,
		spec:       spec,
		config:     cf.Config,
		digest:     digest,
		uid:        uid,
		gid:        gid,
		containers: map[string]*Container{},
	}, nil
}

// RootFS is the image's unpacked root filesystem on the host: what the image contains,
// without the runtime's mounts.
func (b *Bundle) RootFS() string { return filepath.Join(b.dir, "bundle", "rootfs") }

// Config is the image's configuration (user, entrypoint, exposed ports, stop signal).
func (b *Bundle) Config() v1.Config { return b.config }

// Digest is the image's manifest digest.
func (b *Bundle) Digest() v1.Hash { return b.digest }

// User is the numeric uid and gid the image's processes run as.
func (b *Bundle) User() (uid, gid int) { return b.uid, b.gid }

// Close stops and deletes every container still running from the bundle, then removes the
// bundle's files.
func (b *Bundle) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	ctrs := make([]*Container, 0, len(b.containers))
	for _, c := range b.containers {
		ctrs = append(ctrs, c)
	}
	b.mu.Unlock()
	var errs []error
	for _, c := range ctrs {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		errs = append(errs, c.Stop(ctx))
		cancel()
	}
	if err := os.RemoveAll(b.dir); err != nil {
		errs = append(errs, fmt.Errorf("removing bundle %s: %w", b.dir, err))
	}
	return errors.Join(errs...)
}

func newID() string {
	var r [6]byte
	if _, err := rand.Read(r[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return "nginx-forge-" + hex.EncodeToString(r[:])
}
