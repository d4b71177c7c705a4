package ocirun

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/progress"
)

// Option configures what takes options here, each reading its own: Pull and Prepare (the
// bundle's directory, progress), Start and Run (mounts, network, limits).
type Option func(*options)

type options struct {
	dir           string // Pull, Prepare: WithDir
	sink          progress.Sink
	mounts        []mount
	tmpfs         []string
	hostNetwork   bool
	args          []string  // replaces the image's entrypoint and command (Run)
	noFile        [2]uint64 // soft, hard
	extraSpecEdit func(map[string]any)
}

// stopTimeout is how long Stop waits after the image's stop signal before SIGKILL
// (Docker's default).
const stopTimeout = 10 * time.Second

// mount is a host path bound into the container.
type mount struct {
	source      string // host path
	destination string // path in the container
	readOnly    bool
}

// WithMount binds a host file or directory into the container (read-only if ro), like
// `docker run -v src:dst:ro`. The destination need not exist in the image.
func WithMount(src, dst string, ro bool) Option {
	return func(o *options) {
		o.mounts = append(o.mounts, mount{source: src, destination: dst, readOnly: ro})
	}
}

// WithTmpfs mounts a fresh tmpfs, owned by the image's user, on each of dirs (absolute
// paths) instead of the default /tmp alone: nothing in an image's config says where it
// writes, so a read-only root gets its writable directories from the caller (the host engine
// passes plan.Runtime's). /tmp, when listed, is sticky and world-writable, like /tmp anywhere.
func WithTmpfs(dirs ...string) Option {
	return func(o *options) { o.tmpfs = slices.Clone(dirs) }
}

// scratchDir is the one directory every program may expect to write to; a container gets
// a fresh one unless WithTmpfs says otherwise.
const scratchDir = "/tmp"

// withHostNetwork shares the host's network namespace instead of a fresh one. The image's
// exposed ports must then be free on the host; Start checks.
func withHostNetwork() Option { return func(o *options) { o.hostNetwork = true } }

// makeOptions applies opts over the defaults, here and nowhere else: no progress, and for a
// container a tmpfs on /tmp and the descriptor limit. RLIMIT_NOFILE is soft 1024 and hard 524288,
// what Docker 25+ and containerd give a container (so a config that needs more than 1024
// descriptors must raise its own limit, as nginx's worker_rlimit_nofile does), with the
// hard limit lowered to ours when ours is lower: runc sets limits after dropping
// capabilities, so it cannot raise them above what it has.
func makeOptions(opts []Option) options {
	hard := uint64(524288)
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err == nil && rl.Max < hard {
		hard = rl.Max
	}
	o := options{sink: progress.Discard, tmpfs: []string{scratchDir}, noFile: [2]uint64{min(1024, hard), hard}}
	for _, opt := range opts {
		opt(&o)
	}
	if o.sink == nil {
		o.sink = progress.Discard
	}
	return o
}

// writeSpec writes dir/config.json: umoci's configuration of the image, hardened and
// adjusted for o. umoci's config is kept as a generic JSON document so fields this package
// does not know survive untouched.
func (b *Bundle) writeSpec(dir string, o options) error {
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
	hardenProcess(proc, o)
	s["root"] = map[string]any{"path": b.RootFS(), "readonly": true}
	s["hostname"] = "nginx-forge"
	mounts, _ := s["mounts"].([]any)
	mounts = append(mounts, b.tmpfsMounts(o.tmpfs)...)
	binds, err := bindMounts(o.mounts)
	if err != nil {
		return err
	}
	s["mounts"] = append(mounts, binds...)

	linux, _ := s["linux"].(map[string]any)
	if linux == nil {
		return fmt.Errorf("umoci's runtime config has no linux section")
	}
	if o.hostNetwork {
		dropNetworkNamespace(linux)
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

// hardenProcess sets the process section the way a hardened deployment runs the image: no
// terminal, no capabilities, no new privileges, the descriptor limit of o.
func hardenProcess(proc map[string]any, o options) {
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
}

// tmpfsMounts makes each path a fresh tmpfs owned by the image's user.
func (b *Bundle) tmpfsMounts(paths []string) []any {
	var out []any
	for _, p := range paths {
		mode := "mode=0755"
		if p == scratchDir { // sticky and world-writable, like /tmp anywhere
			mode = "mode=1777"
		}
		out = append(out, map[string]any{
			"destination": p, "type": "tmpfs", "source": "tmpfs",
			"options": []string{"nosuid", "nodev", "noexec", mode,
				fmt.Sprintf("uid=%d", b.uid), fmt.Sprintf("gid=%d", b.gid), "size=64m"},
		})
	}
	return out
}

// bindMounts binds each host path into the container, refusing one that does not exist.
func bindMounts(ms []mount) ([]any, error) {
	var out []any
	for _, m := range ms {
		src, err := filepath.Abs(m.source)
		if err != nil {
			return nil, fmt.Errorf("mount source %q: %w", m.source, err)
		}
		if _, err := os.Stat(src); err != nil {
			return nil, fmt.Errorf("mount source for %s: %w", m.destination, err)
		}
		rw := "rw"
		if m.readOnly {
			rw = "ro"
		}
		out = append(out, map[string]any{
			"destination": m.destination, "type": "bind", "source": src,
			"options": []string{"rbind", rw, "nosuid", "nodev"},
		})
	}
	return out, nil
}

// dropNetworkNamespace removes the network namespace from linux.namespaces, so the
// container shares the host's.
func dropNetworkNamespace(linux map[string]any) {
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
