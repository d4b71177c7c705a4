package smoke

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/nginx-forge/nginx-forge/pipeline/ocirun"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
)

// ImageOptions configure Ref and Image: the checks' options plus how to run the image.
type ImageOptions struct {
	Options
	// Insecure allows a plain-HTTP registry (loopback registries already are).
	Insecure bool
	// Remote are extra go-containerregistry options for the pull (auth, transport).
	Remote []remote.Option
	// ConfD, when set, is a host directory mounted read-only at /etc/nginx/conf.d: test your
	// server blocks against the image (a broken one fails "nginx -t").
	ConfD string
	// NoTLS runs without the generated certificate (the TLS checks are then skipped).
	NoTLS bool
	// WorkDir holds the unpacked image and the TLS directory (default os.TempDir()).
	WorkDir string
}

// Ref pulls ref from its registry and runs the checks on it in runc (see Image).
func Ref(ctx context.Context, ref string, o ImageOptions) (Report, v1.Hash, error) {
	opts := []ocirun.Option{ocirun.WithRemoteOptions(o.Remote...)}
	if o.Insecure {
		opts = append(opts, ocirun.WithInsecure())
	}
	b, err := ocirun.Pull(ctx, ref, append(opts, o.ocirunOptions()...)...)
	if err != nil {
		return Report{}, v1.Hash{}, err
	}
	defer b.Close()
	rep, err := runBundle(ctx, b, o)
	return rep, b.Digest(), err
}

// Verify returns a function for image.WithVerify (image.VerifyFunc): it runs the checks on
// exactly the pushed digest, prints the table to table (nil: not printed) and fails, naming
// the failed checks, unless all passed, so a failed smoke test never moves a tag.
func Verify(o ImageOptions, table io.Writer) func(ctx context.Context, ref name.Digest) error {
	return func(ctx context.Context, ref name.Digest) error {
		rep, got, err := Ref(ctx, ref.String(), o)
		if err != nil {
			return fmt.Errorf("smoke testing %s: %w", ref, err)
		}
		if table != nil {
			fmt.Fprintf(table, "smoke checks of %s\n\n", ref)
			if err := rep.Print(table); err != nil {
				return err
			}
		}
		if got.String() != ref.DigestStr() {
			return fmt.Errorf("smoke testing %s: the registry served %s", ref, got)
		}
		if err := rep.Err(); err != nil {
			return fmt.Errorf("smoke testing %s: %w", ref, err)
		}
		return nil
	}
}

// Image runs img in runc the way it is meant to run (its user, read-only root, tmpfs on
// the writable directories, no capabilities, an isolated network namespace), with a fresh
// certificate and the tls.conf documented in the image's own nginx.conf mounted at
// /etc/nginx/tls, and returns the checks' table. The error is for failures to get that far
// (pull, unpack, a missing tls.conf block); failed checks are in the report (Report.Err).
func Image(ctx context.Context, img v1.Image, o ImageOptions) (Report, error) {
	b, err := ocirun.Prepare(ctx, img, o.ocirunOptions()...)
	if err != nil {
		return Report{}, err
	}
	defer b.Close()
	return runBundle(ctx, b, o)
}

func (o ImageOptions) ocirunOptions() []ocirun.Option {
	opts := []ocirun.Option{ocirun.WithLogger(o.Logf)}
	if o.WorkDir != "" {
		opts = append(opts, ocirun.WithDir(o.WorkDir))
	}
	return opts
}

func runBundle(ctx context.Context, b *ocirun.Bundle, o ImageOptions) (Report, error) {
	o.defaults()
	var runOpts []ocirun.RunOption
	if o.ConfD != "" {
		runOpts = append(runOpts, ocirun.WithMount(o.ConfD, plan.Runtime.ConfDir, true))
	}
	if !o.NoTLS {
		mat, dir, err := prepareTLS(ctx, b, o)
		if err != nil {
			return Report{}, err
		}
		defer os.RemoveAll(dir)
		o.TLS = mat
		runOpts = append(runOpts, ocirun.WithMount(dir, plan.Runtime.TLSDir, true))
	}
	ctr, err := b.Start(ctx, runOpts...)
	if err != nil {
		// Nothing runs, but the image's files can still be checked, and every runtime
		// check says why it failed.
		return Run(ctx, NotStarted(b.RootFS(), err), o.Options), nil
	}
	rep := Run(ctx, ctr, o.Options)
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ctr.Stop(stopCtx); err != nil {
		rep.Results = append(rep.Results, Result{Name: "stop", Status: Fail, Detail: err.Error()})
	}
	return rep, nil
}

// prepareTLS writes the certificate, key and the image's documented tls.conf into a new
// directory for /etc/nginx/tls.
func prepareTLS(ctx context.Context, b *ocirun.Bundle, o ImageOptions) (*TLS, string, error) {
	confPath, err := resolveIn(b.RootFS(), "/etc/nginx/nginx.conf")
	if err != nil {
		return nil, "", fmt.Errorf("reading the image's nginx.conf: %w", err)
	}
	conf, err := os.ReadFile(confPath)
	if err != nil {
		return nil, "", fmt.Errorf("reading the image's nginx.conf: %w", err)
	}
	http3, err := wantHTTP3(ctx, b, o)
	if err != nil {
		return nil, "", err
	}
	tlsConf, err := TLSConf(conf, http3)
	if err != nil {
		return nil, "", fmt.Errorf("the image's /etc/nginx/nginx.conf: %w (set NoTLS to skip the TLS checks)", err)
	}
	mat, err := NewTLS()
	if err != nil {
		return nil, "", err
	}
	dir, err := os.MkdirTemp(o.WorkDir, "smoke-tls-")
	if err != nil {
		return nil, "", fmt.Errorf("making TLS directory: %w", err)
	}
	// The directory itself must be searchable by the container's user.
	if err := os.Chmod(dir, 0o755); err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	uid, gid := b.User()
	if err := mat.WriteDir(dir, tlsConf, uid, gid); err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	return mat, filepath.Clean(dir), nil
}

// wantHTTP3 decides whether tls.conf keeps its QUIC lines: from the expected modules, or
// else from the image's own `nginx -V`.
func wantHTTP3(ctx context.Context, b *ocirun.Bundle, o ImageOptions) (bool, error) {
	const flag = "--with-http_v3_module"
	if o.Expect.Modules != nil {
		for _, m := range o.Expect.Modules {
			if m == flag {
				return true, nil
			}
		}
		return false, nil
	}
	so, se, code, err := b.Run(ctx, []string{o.Binary, "-V"})
	if err != nil {
		return false, fmt.Errorf("running nginx -V to see its modules: %w", err)
	}
	if code != 0 {
		// The checks will show why; test without QUIC meanwhile.
		return false, nil
	}
	return strings.Contains(string(so)+string(se), flag), nil
}

// NotStarted is the Target of an image whose container could not be started: the static
// checks still read its files, and every runtime check fails with cause.
func NotStarted(rootfs string, cause error) Target { return notStarted{rootfs, cause} }

type notStarted struct {
	root  string
	cause error
}

func (n notStarted) err() error { return fmt.Errorf("the container did not start: %w", n.cause) }
func (n notStarted) Exec(context.Context, ...string) ([]byte, []byte, int, error) {
	return nil, nil, -1, n.err()
}
func (n notStarted) Addr(network string, port int) string {
	return net.JoinHostPort("127.0.0.1", fmt.Sprint(port))
}
func (n notStarted) DialContext(context.Context, string, string) (net.Conn, error) {
	return nil, n.err()
}
func (n notStarted) ListenPacket(context.Context, string, string) (net.PacketConn, error) {
	return nil, n.err()
}
func (n notStarted) RootFS() string                               { return n.root }
func (n notStarted) ProcStatus(context.Context) ([]string, error) { return nil, n.err() }
func (n notStarted) MountInfo(context.Context) (string, error)    { return "", n.err() }
func (n notStarted) Logs() ([]byte, error)                        { return nil, nil }
func (n notStarted) Exited() (bool, string)                       { return true, "did not start: " + n.cause.Error() }
