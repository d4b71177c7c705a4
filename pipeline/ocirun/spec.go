package ocirun

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/plan"
)

// RunOption configures one container (Start, Run).
type RunOption func(*runOptions)

type runOptions struct {
	mounts        []Mount
	tmpfs         []string
	hostNetwork   bool
	args          []string
	writableRoot  bool
	stopTimeout   time.Duration
	noFile        [2]uint64 // soft, hard
	extraSpecEdit func(map[string]any)
}

// Mount is a host path bound into the container.
type Mount struct {
	Source      string // host path
	Destination string // path in the container
	ReadOnly    bool
}

// WithMount binds a host file or directory into the container (read-only if ro), like
// `docker run -v src:dst:ro`. The destination need not exist in the image.
func WithMount(src, dst string, ro bool) RunOption {
	return func(o *runOptions) {
		o.mounts = append(o.mounts, Mount{Source: src, Destination: dst, ReadOnly: ro})
	}
}

// WithTmpfs replaces the default tmpfs mounts (plan.Runtime.Tmpfs(): the runtime
// contract's writable directories and /tmp): each path becomes a fresh tmpfs owned by the
// image's user.
func WithTmpfs(paths ...string) RunOption {
	return func(o *runOptions) { o.tmpfs = append([]string{}, paths...) }
}

// WithHostNetwork shares the host's network namespace instead of a fresh one. The image's
// exposed ports must then be free on the host; Start checks.
func WithHostNetwork() RunOption { return func(o *runOptions) { o.hostNetwork = true } }

// WithArgs replaces the image's entrypoint and command by argv (argv[0] is a path in the image).
func WithArgs(argv ...string) RunOption {
	return func(o *runOptions) { o.args = append([]string{}, argv...) }
}

// WithWritableRoot leaves the root filesystem writable (the default is read-only, which is
// how the image is meant to run).
func WithWritableRoot() RunOption { return func(o *runOptions) { o.writableRoot = true } }

// WithStopTimeout is how long Stop waits after the image's stop signal before SIGKILL
// (default 10s, Docker's).
func WithStopTimeout(d time.Duration) RunOption {
	return func(o *runOptions) { o.stopTimeout = d }
}

// WithNoFile sets RLIMIT_NOFILE. The default is soft 1024 and hard 524288, what Docker 25+
// and containerd give a container (so a config that needs more than 1024 descriptors must
// raise its own limit, as nginx's worker_rlimit_nofile does), with the hard limit lowered
// to ours when ours is lower: runc sets limits after dropping capabilities, so it cannot
// raise them above what it has.
func WithNoFile(soft, hard uint64) RunOption {
	return func(o *runOptions) { o.noFile = [2]uint64{soft, hard} }
}

func newRunOptions(opts []RunOption) runOptions {
	hard := uint64(524288)
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err == nil && rl.Max < hard {
		hard = rl.Max
	}
	// The tmpfs mounts come from the runtime contract: nothing in an image's config says
	// where it writes, and a read-only root needs them to start.
	o := runOptions{tmpfs: plan.Runtime.Tmpfs(), stopTimeout: 10 * time.Second, noFile: [2]uint64{min(1024, hard), hard}}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// writeSpec writes dir/config.json: umoci's configuration of the image, hardened and
// adjusted for o. umoci's config is kept as a generic JSON document so fields this package
// does not know survive untouched.
func (b *Bundle) writeSpec(dir string, o runOptions) error {
	raw, err := json.Marshal(b.spec)
	if err != nil {
		return fmt.Errorf("copying runtime config: %w", err)
	}
	var s map[string]any
	if err := json.Unmarshal(raw, &s); err != nil {
		return fmt.Errorf("copying runtime config: %w", err)
	}
	proc, _ := s["process"].(map[string]any)
	if proc == nil {
		return fmt.Errorf("umoci's runtime config has no process section")
	}
	// No terminal: the container's stdout and stderr are pipes we read, as under Docker
	// without -t or Kubernetes.
	proc["terminal"] = false
	if len(o.args) > 0 {
		proc["args"] = o.args
	}
	if env, ok := proc["env"].([]any); ok {
		kept := env[:0]
		for _, e := range env {
			if e != "TERM=xterm" { // umoci's default for a terminal we do not give
				kept = append(kept, e)
			}
		}
		proc["env"] = kept
	}
	// No capabilities at all (Kubernetes' "restricted" profile, `--cap-drop=ALL`): the
	// image listens on unprivileged ports and must not need any. umoci grants
	// NET_BIND_SERVICE, KILL and AUDIT_WRITE, even as ambient capabilities.
	proc["capabilities"] = map[string]any{
		"bounding": []string{}, "effective": []string{}, "inheritable": []string{},
		"permitted": []string{}, "ambient": []string{},
	}
	proc["noNewPrivileges"] = true
	proc["rlimits"] = []map[string]any{{"type": "RLIMIT_NOFILE", "soft": o.noFile[0], "hard": o.noFile[1]}}

	s["root"] = map[string]any{"path": b.RootFS(), "readonly": !o.writableRoot}
	s["hostname"] = "nginx-forge"

	mounts, _ := s["mounts"].([]any)
	for _, p := range o.tmpfs {
		mode := "mode=0755"
		if p == plan.ScratchDir { // sticky and world-writable, like /tmp anywhere
			mode = "mode=1777"
		}
		mounts = append(mounts, map[string]any{
			"destination": p, "type": "tmpfs", "source": "tmpfs",
			"options": []string{"nosuid", "nodev", "noexec", mode,
				fmt.Sprintf("uid=%d", b.uid), fmt.Sprintf("gid=%d", b.gid), "size=64m"},
		})
	}
	for _, m := range o.mounts {
		src, err := filepath.Abs(m.Source)
		if err != nil {
			return fmt.Errorf("mount source %q: %w", m.Source, err)
		}
		if _, err := os.Stat(src); err != nil {
			return fmt.Errorf("mount source for %s: %w", m.Destination, err)
		}
		rw := "rw"
		if m.ReadOnly {
			rw = "ro"
		}
		mounts = append(mounts, map[string]any{
			"destination": m.Destination, "type": "bind", "source": src,
			"options": []string{"rbind", rw, "nosuid", "nodev"},
		})
	}
	s["mounts"] = mounts

	linux, _ := s["linux"].(map[string]any)
	if linux == nil {
		return fmt.Errorf("umoci's runtime config has no linux section")
	}
	if o.hostNetwork {
		nss, _ := linux["namespaces"].([]any)
		kept := nss[:0]
		for _, ns := range nss {
			if m, ok := ns.(map[string]any); ok && m["type"] == "network" {
				continue
			}
			kept = append(kept, ns)
		}
		linux["namespaces"] = kept
	}
	if o.extraSpecEdit != nil {
		o.extraSpecEdit(s)
	}
	out, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding runtime config: %w", err)
	}
	return os.WriteFile(filepath.Join(dir, "config.json"), out, 0o600)
}

// specUser reads the numeric user umoci resolved from the image's config (a name such as
// "nonroot" is looked up in the image's /etc/passwd by umoci).
func specUser(s map[string]any) (uid, gid int, err error) {
	proc, _ := s["process"].(map[string]any)
	user, _ := proc["user"].(map[string]any)
	u, okU := user["uid"].(float64)
	g, okG := user["gid"].(float64)
	if user == nil || (!okU && !okG) {
		return 0, 0, fmt.Errorf("umoci's runtime config has no process user")
	}
	// umoci leaves out a zero id (omitempty): root.
	return int(u), int(g), nil
}
