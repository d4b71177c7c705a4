package smoke

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/toolbox"
)

// Process is the Target of a server this program started itself, in the container (or on
// the machine) it runs in, reached over the network at Host: besides the network checks it
// observes the server's processes (/proc) and its output (RootWatch observes whether it
// wrote to the root filesystem). It cannot run commands in the image (Exec) or read the
// root's mount options (MountInfo): those are the runtime's, not the server's.
type Process struct {
	Network
	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error

	mu  sync.Mutex
	out bytes.Buffer
}

// StartProcess starts argv (the image's entrypoint) with its output captured.
func StartProcess(host string, argv []string) (*Process, error) {
	if len(argv) == 0 {
		return nil, errors.New("no command to start")
	}
	p := &Process{Network: Network{Host: host}, done: make(chan struct{})}
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Stdout = (*lockedWriter)(p)
	p.cmd.Stderr = (*lockedWriter)(p)
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %q: %w", argv, err)
	}
	go func() { p.waitErr = p.cmd.Wait(); close(p.done) }()
	return p, nil
}

type lockedWriter Process

func (w *lockedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.out.Write(b)
}

// Exec is unsupported: this client does not run the image's commands.
func (p *Process) Exec(context.Context, ...string) ([]byte, []byte, int, error) {
	return nil, nil, -1, fmt.Errorf("%w: the client observes the server it started, it runs no other command of the image", errors.ErrUnsupported)
}

// ProcStatus is /proc/PID/status of the started process and all its descendants, it first.
func (p *Process) ProcStatus(context.Context) ([]string, error) {
	pids, err := descendants(p.cmd.Process.Pid)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, pid := range pids {
		st, err := toolbox.ProcStatus(pid)
		if err != nil {
			if pid == p.cmd.Process.Pid {
				return nil, fmt.Errorf("reading the server's /proc status: %w", err)
			}
			continue // a worker that just exited
		}
		out = append(out, st)
	}
	return out, nil
}

// descendants is pid followed by every process whose parent chain leads to it.
func descendants(pid int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	parent := map[int]int{}
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 {
			if f := strings.Fields(s[i+1:]); len(f) >= 2 {
				parent[n], _ = strconv.Atoi(f[1])
			}
		}
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		var kids []int
		for child, pp := range parent {
			if pp == out[i] {
				kids = append(kids, child)
			}
		}
		sort.Ints(kids)
		out = append(out, kids...)
	}
	return out, nil
}

// MountInfo is unsupported: the root's mount options are the runtime's choice (a Dagger
// container's root is always read-write); RootWatch observes what the server wrote instead.
func (p *Process) MountInfo(context.Context) (string, error) {
	return "", fmt.Errorf("%w: the root's mount options belong to the runtime this client runs in, not to the server; its writes are watched instead", errors.ErrUnsupported)
}

// Logs is the started process's stdout and stderr so far.
func (p *Process) Logs() ([]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return bytes.Clone(p.out.Bytes()), nil
}

// Exited reports whether the started process has exited.
func (p *Process) Exited() (bool, string) {
	select {
	case <-p.done:
		if p.waitErr != nil {
			return true, "exited: " + p.waitErr.Error()
		}
		return true, "exited with status 0"
	default:
		return false, ""
	}
}

// Stop sends SIGQUIT (nginx's graceful stop, the image's STOPSIGNAL) and waits; after
// timeout the whole process group is killed.
func (p *Process) Stop(timeout time.Duration) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-p.done:
		return nil
	case <-time.After(timeout):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		return fmt.Errorf("the server did not stop within %v of SIGQUIT; killed", timeout)
	}
}

// RootWatch is the read-only root check as a client beside the server can observe it:
// the entries of root's own filesystem (not other mounts: /proc, the writable
// directories' mounts...) are recorded before the server starts, and every entry added,
// removed or whose status changed (inode, size, ctime) since then is a write to the root.
// None means the server needed no writable root; it does not show a read-only mount.
type RootWatch struct {
	root       string
	before     map[string]fileState
	unreadable []string
}

type fileState struct {
	ino, size       uint64
	ctimeS, ctimeNs int64
}

// WatchRoot records root's entries now (call it before starting the server).
func WatchRoot(root string) (*RootWatch, error) {
	files, unreadable, err := scanRoot(root)
	if err != nil {
		return nil, err
	}
	return &RootWatch{root: root, before: files, unreadable: unreadable}, nil
}

// Result compares root's entries with the recording and reports the read-only row.
func (w *RootWatch) Result() Result {
	res := Result{Name: CheckReadOnly}
	after, _, err := scanRoot(w.root)
	if err != nil {
		res.Status, res.Detail = Fail, err.Error()
		return res
	}
	var changed []string
	for p, st := range after {
		if old, ok := w.before[p]; !ok {
			changed = append(changed, p+" (added)")
		} else if old != st {
			changed = append(changed, p+" (changed)")
		}
	}
	for p := range w.before {
		if _, ok := after[p]; !ok {
			changed = append(changed, p+" (removed)")
		}
	}
	sort.Strings(changed)
	if len(changed) > 0 {
		if len(changed) > 20 {
			changed = append(changed[:20], fmt.Sprintf("... (%d in all)", len(changed)))
		}
		res.Status = Fail
		res.Detail = "written on the root filesystem while the server ran: " + strings.Join(changed, " ")
		return res
	}
	res.Status = Pass
	res.Detail = fmt.Sprintf("nothing on %s's own filesystem was added, removed or changed while the server ran (%d entries compared, other mounts excluded", w.root, len(after))
	if len(w.unreadable) > 0 {
		res.Detail += fmt.Sprintf("; %d directories unreadable to this user: %s", len(w.unreadable), strings.Join(w.unreadable, " "))
	}
	res.Detail += "): it needs no writable root"
	return res
}

// scanRoot records the entries of root's filesystem (same device, no other mount point).
func scanRoot(root string) (files map[string]fileState, unreadable []string, err error) {
	mounts, err := mountPoints()
	if err != nil {
		return nil, nil, err
	}
	var rootStat syscall.Stat_t
	if err := syscall.Lstat(root, &rootStat); err != nil {
		return nil, nil, fmt.Errorf("stat %s: %w", root, err)
	}
	rootAbs, _ := filepath.Abs(root)
	files = map[string]fileState{}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrPermission) && d != nil && d.IsDir() {
				unreadable = append(unreadable, p)
				return fs.SkipDir
			}
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
				return nil
			}
			return err
		}
		abs, _ := filepath.Abs(p)
		var st syscall.Stat_t
		if (abs != rootAbs && mounts[abs]) || syscall.Lstat(p, &st) != nil || st.Dev != rootStat.Dev {
			if d.IsDir() && abs != rootAbs {
				return fs.SkipDir
			}
			return nil
		}
		files[p] = fileState{ino: st.Ino, size: uint64(st.Size), ctimeS: st.Ctim.Sec, ctimeNs: st.Ctim.Nsec}
		return nil
	})
	return files, unreadable, err
}

// mountPoints are the mount points of this process's mount namespace.
func mountPoints() (map[string]bool, error) {
	mi, err := toolbox.MountInfo(toolbox.Self)
	if err != nil {
		return nil, fmt.Errorf("reading the mount points: %w", err)
	}
	out := map[string]bool{}
	for _, l := range strings.Split(mi, "\n") {
		if f := strings.Fields(l); len(f) >= 5 {
			out[unescapeMount(f[4])] = true
		}
	}
	return out, nil
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// RunClient runs the suite the way the in-engine client does: against the server at
// req.Address, or, with req.Start, against the server it starts and observes (processes,
// output, writes to req.WatchRoot, which the read-only row reports instead of mount
// options). The error is for failures to get that far.
func RunClient(ctx context.Context, req ClientRequest, o Options) (Report, error) {
	if len(req.Start) == 0 {
		return Run(ctx, Network{Host: req.Address}, o), nil
	}
	root := req.WatchRoot
	if root == "" {
		root = "/"
	}
	watch, err := WatchRoot(root)
	if err != nil {
		return Report{}, err
	}
	p, err := StartProcess(req.Address, req.Start)
	if err != nil {
		return Report{}, err
	}
	rep := Run(ctx, p, o)
	stopErr := p.Stop(10 * time.Second)
	rep = Combine(rep, Report{Results: []Result{watch.Result()}}, "watched for writes instead")
	if stopErr != nil {
		rep.Results = append(rep.Results, Result{Name: "stop", Status: Fail, Detail: stopErr.Error()})
	}
	return rep, nil
}
