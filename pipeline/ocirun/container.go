package ocirun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/toolbox"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
)

// Container is a container started from a Bundle. Its methods are safe for concurrent use.
type Container struct {
	b    *Bundle
	id   string
	dir  string
	opts options
	pid  int // host pid of the container's init (the entrypoint), 0 if it never ran

	logs *logBuffer
	cmd  *exec.Cmd
	done chan struct{} // closed when runc (and so the container) has exited
	// exit is runc's wait result: runc run exits with the container process's status.
	exit error

	stopOnce sync.Once
	stopErr  error
}

// Start runs the image's entrypoint in a new container and returns once runc reports it
// running, or once it has already exited (a bad configuration makes nginx exit at once:
// Exited then says how, and Logs has nginx's message). The error is for failures to set
// the container up. The caller must Stop the container (or Close the bundle).
//
// runc runs in the foreground as our child (not `runc run -d`): it then reports the
// container's exit status, and the container's init is never reparented to the host's
// init, where its exit status would be lost.
func (b *Bundle) Start(ctx context.Context, opts ...Option) (*Container, error) {
	c, err := b.launch(ctx, makeOptions(opts), nil, nil)
	if err != nil {
		return nil, err
	}
	if err := c.waitStarted(ctx); err != nil {
		stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return nil, errors.Join(err, c.Stop(stopCtx))
	}
	b.sink.Send(progress.Detailf("container %s started (pid %d)", c.id, c.pid))
	return c, nil
}

// launch starts `runc run` for a new container; stdout/stderr nil means both go to the
// container's log buffer.
func (b *Bundle) launch(ctx context.Context, o options, stdout, stderr *bytes.Buffer) (*Container, error) {
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return nil, errors.New("starting container: bundle is closed")
	}
	if o.hostNetwork {
		if err := portsFree(b.config.ExposedPorts); err != nil {
			return nil, err
		}
	}
	id := newID()
	dir := filepath.Join(b.dir, id)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("making container directory: %w", err)
	}
	if err := b.writeSpec(dir, o); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("writing runtime config for container %s: %w", id, err)
	}
	if err := os.MkdirAll(runcRoot, 0o700); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("making runc root %s: %w", runcRoot, err)
	}
	c := &Container{b: b, id: id, dir: dir, opts: o, logs: newLogBuffer(1 << 20), done: make(chan struct{})}
	cmd := exec.Command("runc", "--root", runcRoot, "run", "--bundle", dir, id)
	if stdout != nil {
		cmd.Stdout, cmd.Stderr = stdout, stderr
	} else {
		cmd.Stdout, cmd.Stderr = c.logs, c.logs
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Our own process group: a Ctrl-C at the terminal reaches us, and we stop the
		// container in order, instead of runc forwarding SIGINT to it behind our back.
		Setpgid: true,
		// If we die, runc forwards this to the container, which then exits, and runc
		// deletes it: no container outlives us.
		Pdeathsig: syscall.SIGTERM,
	}
	b.sink.Send(progress.Detailf("runc --root %s run --bundle %s %s", runcRoot, dir, id))
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("starting runc: %w", err)
	}
	c.cmd = cmd
	b.mu.Lock()
	b.containers[id] = c
	b.mu.Unlock()
	go func() {
		c.exit = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// waitStarted polls runc until the container runs (and learns its pid) or has exited.
func (c *Container) waitStarted(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		st, err := c.state(ctx)
		if err == nil && st.Pid > 0 && (st.Status == "running" || st.Status == "created") {
			c.pid = st.Pid
			if st.Status == "running" {
				return nil
			}
		}
		select {
		case <-c.done:
			return nil // it ran and exited; Exited says how
		case <-ctx.Done():
			return fmt.Errorf("container %s did not start: %w; output: %s", c.id, ctx.Err(), toolbox.Tail(c.logs.String(), 2000))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

type runcState struct {
	ID     string `json:"id"`
	Pid    int    `json:"pid"`
	Status string `json:"status"`
}

func (c *Container) state(ctx context.Context) (runcState, error) {
	out, err := c.runc(ctx, "state", c.id)
	if err != nil {
		return runcState{}, err
	}
	var st runcState
	if err := json.Unmarshal(out, &st); err != nil {
		return runcState{}, fmt.Errorf("parsing runc state of %s: %w", c.id, err)
	}
	return st, nil
}

func (c *Container) runc(ctx context.Context, args ...string) ([]byte, error) {
	full := append([]string{"--root", runcRoot}, args...)
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "runc", full...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("runc %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// ID is the container's runc id.
func (c *Container) ID() string { return c.id }

// Pid is the host pid of the container's init process (nginx's master), 0 if it never ran.
func (c *Container) Pid() int { return c.pid }

// RootFS is the image's root filesystem on the host (see Bundle.RootFS).
func (c *Container) RootFS() string { return c.b.RootFS() }

// Output returns the container's stdout and stderr so far, interleaved as written (the
// last MiB).
func (c *Container) Output() []byte { return c.logs.Bytes() }

// Logs is Output, for pipeline/smoke's Target (runc always captures the output).
func (c *Container) Logs() ([]byte, error) { return c.Output(), nil }

// Exited reports whether the container has exited, and if so how (runc's exit status is
// the container process's).
func (c *Container) Exited() (bool, string) {
	select {
	case <-c.done:
	default:
		return false, ""
	}
	if c.exit == nil {
		return true, "exited with status 0"
	}
	var ee *exec.ExitError
	if errors.As(c.exit, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return true, "killed by " + ws.Signal().String()
		}
		return true, fmt.Sprintf("exited with status %d", ee.ExitCode())
	}
	return true, c.exit.Error()
}

// Done is closed when the container has exited.
func (c *Container) Done() <-chan struct{} { return c.done }

// Exec runs argv in the container as the image's user and returns its output and exit
// status; err is only for failing to run it at all. If the container is no longer running
// (nginx refused its configuration, say), argv runs in a fresh container from the same
// bundle with the same mounts, user and read-only root, so diagnostics like `nginx -t`
// still see what the server saw.
func (c *Container) Exec(ctx context.Context, argv ...string) (stdout, stderr []byte, exitCode int, err error) {
	if len(argv) == 0 {
		return nil, nil, -1, errors.New("exec: no command given")
	}
	if exited, _ := c.Exited(); exited {
		return c.b.run(ctx, c.opts, argv)
	}
	var so, se bytes.Buffer
	args := []string{"--root", runcRoot, "exec", "--user", fmt.Sprintf("%d:%d", c.b.uid, c.b.gid), c.id}
	cmd := exec.CommandContext(ctx, "runc", append(args, argv...)...)
	cmd.Stdout, cmd.Stderr = &so, &se
	c.b.sink.Send(progress.Detailf("runc exec %s %s", c.id, strings.Join(argv, " ")))
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) && runcLostContainer(se.String()) {
		// The container died between our look and runc's: wait for runc run to notice,
		// then run argv in a fresh container as above.
		select {
		case <-c.done:
			return c.b.run(ctx, c.opts, argv)
		case <-time.After(5 * time.Second):
		case <-ctx.Done():
		}
	}
	switch {
	case err == nil:
		return so.Bytes(), se.Bytes(), 0, nil
	case errors.As(err, &ee):
		return so.Bytes(), se.Bytes(), ee.ExitCode(), nil
	default:
		return so.Bytes(), se.Bytes(), -1, fmt.Errorf("runc exec %s in %s: %w", argv[0], c.id, err)
	}
}

// Run runs argv to completion in a new container (like `docker run --rm --entrypoint`),
// with the bundle's defaults changed by opts, and returns its output and exit status.
func (b *Bundle) Run(ctx context.Context, argv []string, opts ...Option) (stdout, stderr []byte, exitCode int, err error) {
	return b.run(ctx, makeOptions(opts), argv)
}

func (b *Bundle) run(ctx context.Context, o options, argv []string) ([]byte, []byte, int, error) {
	o.args = argv
	// A one-off command never needs the host's ports, even when the server does.
	o.hostNetwork = false
	var so, se bytes.Buffer
	c, err := b.launch(ctx, o, &so, &se)
	if err != nil {
		return nil, nil, -1, err
	}
	select {
	case <-c.done:
	case <-ctx.Done():
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Stop(stopCtx); err != nil {
		return so.Bytes(), se.Bytes(), -1, err
	}
	if ctx.Err() != nil {
		return so.Bytes(), se.Bytes(), -1, fmt.Errorf("running %s: %w", argv[0], ctx.Err())
	}
	if c.exit == nil {
		return so.Bytes(), se.Bytes(), 0, nil
	}
	var ee *exec.ExitError
	if errors.As(c.exit, &ee) {
		return so.Bytes(), se.Bytes(), ee.ExitCode(), nil
	}
	return so.Bytes(), se.Bytes(), -1, fmt.Errorf("running %s: %w", argv[0], c.exit)
}

// Stop sends the image's stop signal (SIGTERM if it names none), waits up to the stop
// timeout, then SIGKILLs; it then deletes the container and its directory. Calling it again
// returns the first result.
func (c *Container) Stop(ctx context.Context) error {
	c.stopOnce.Do(func() { c.stopErr = c.stop(ctx) })
	return c.stopErr
}

func (c *Container) stop(ctx context.Context) error {
	var errs []error
	if exited, _ := c.Exited(); !exited {
		sig := c.b.config.StopSignal
		if sig == "" {
			sig = "SIGTERM"
		}
		c.b.sink.Send(progress.Detailf("runc kill %s %s", c.id, sig))
		if _, err := c.runc(ctx, "kill", c.id, sig); err != nil && !c.hasExited() {
			errs = append(errs, err)
		}
		select {
		case <-c.done:
		case <-time.After(stopTimeout):
			c.b.sink.Send(progress.Detailf("container %s still running %s after %s: SIGKILL", c.id, stopTimeout, sig))
			if _, err := c.runc(ctx, "kill", "--all", c.id, "KILL"); err != nil && !c.hasExited() {
				errs = append(errs, err)
			}
		case <-ctx.Done():
		}
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
			// runc itself is stuck: kill it so it cannot hold the container's pipes.
			c.cmd.Process.Kill()
			errs = append(errs, fmt.Errorf("container %s did not exit after SIGKILL", c.id))
		}
	}
	// `runc run` deletes the container when it exits; delete -f makes sure (it also covers
	// a runc that was killed), and tolerates one that is already gone.
	if out, err := c.runc(context.Background(), "delete", "-f", c.id); err != nil && !strings.Contains(string(out)+err.Error(), "does not exist") {
		errs = append(errs, err)
	}
	if err := os.RemoveAll(c.dir); err != nil {
		errs = append(errs, err)
	}
	c.b.mu.Lock()
	delete(c.b.containers, c.id)
	c.b.mu.Unlock()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("stopping container %s: %w", c.id, err)
	}
	return nil
}

func (c *Container) hasExited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// Pids are the host pids of every process in the container (`runc ps`).
func (c *Container) Pids(ctx context.Context) ([]int, error) {
	out, err := c.runc(ctx, "ps", "--format", "json", c.id)
	if err != nil {
		return nil, err
	}
	var pids []int
	if err := json.Unmarshal(out, &pids); err != nil {
		return nil, fmt.Errorf("parsing runc ps output %q: %w", out, err)
	}
	return pids, nil
}

// ProcStatus returns /proc/PID/status of every process in the container, init first.
func (c *Container) ProcStatus(ctx context.Context) ([]string, error) {
	if exited, how := c.Exited(); exited {
		return nil, fmt.Errorf("container %s %s", c.id, how)
	}
	pids, err := c.Pids(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, pid := range pids {
		st, err := toolbox.ProcStatus(pid)
		if err != nil {
			continue // exited between ps and now
		}
		if pid == c.pid {
			out = append([]string{st}, out...)
		} else {
			out = append(out, st)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("container %s has no processes", c.id)
	}
	return out, nil
}

// MountInfo returns /proc/PID/mountinfo of the container's init: the mounts as the
// container sees them.
func (c *Container) MountInfo(ctx context.Context) (string, error) {
	if exited, how := c.Exited(); exited {
		return "", fmt.Errorf("container %s %s", c.id, how)
	}
	mi, err := toolbox.MountInfo(c.pid)
	if err != nil {
		return "", fmt.Errorf("reading mounts of container %s: %w", c.id, err)
	}
	return mi, nil
}

// portsFree checks that the image's exposed ports ("8080/tcp") can be bound on the host.
func portsFree(exposed map[string]struct{}) error {
	for p := range exposed {
		port, proto, _ := strings.Cut(p, "/")
		if proto == "" {
			proto = "tcp"
		}
		addr := ":" + port
		var err error
		switch proto {
		case "tcp":
			var l net.Listener
			if l, err = net.Listen("tcp", addr); err == nil {
				l.Close()
			}
		case "udp":
			var pc net.PacketConn
			if pc, err = net.ListenPacket("udp", addr); err == nil {
				pc.Close()
			}
		default:
			continue
		}
		if err != nil {
			return fmt.Errorf("port %s is in use on the host, and the container shares the host's network: free it, or run without host networking (%w)", p, err)
		}
	}
	return nil
}

// logBuffer keeps the last max bytes written to it.
type logBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func newLogBuffer(max int) *logBuffer { return &logBuffer{max: max} }

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	if over := len(l.buf) - l.max; over > 0 {
		l.buf = append(l.buf[:0], l.buf[over:]...)
	}
	return len(p), nil
}

func (l *logBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]byte(nil), l.buf...)
}

func (l *logBuffer) String() string { return string(l.Bytes()) }

// runcLostContainer tells runc's own "no such (running) container" errors from the exit
// status of the command it ran.
func runcLostContainer(stderr string) bool {
	for _, s := range []string{"container does not exist", "cannot exec in a stopped container", "cannot exec a container that has stopped"} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}
