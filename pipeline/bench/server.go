package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// BinaryInfo is what `nginx -V` says about a binary.
type BinaryInfo struct {
	Path      string `json:"path"`
	Version   string `json:"version"`           // "1.26.3"
	OpenSSL   string `json:"openssl,omitempty"` // "built with OpenSSL 3.5.7 1 Jul 2026"
	Configure string `json:"configure"`
}

var versionRE = regexp.MustCompile(`nginx version: nginx/(\S+)`)

// probe runs `bin -V`.
func probe(ctx context.Context, bin string) (BinaryInfo, error) {
	abs, err := filepath.Abs(bin)
	if err != nil {
		return BinaryInfo{}, fmt.Errorf("nginx binary %q: %w", bin, err)
	}
	if fi, err := os.Stat(abs); err != nil || fi.IsDir() {
		return BinaryInfo{}, fmt.Errorf("nginx binary %q: not a file (give an nginx executable, or an install tree with usr/sbin/nginx)", bin)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, abs, "-V").CombinedOutput()
	if err != nil {
		return BinaryInfo{}, fmt.Errorf("running %s -V: %w\n%s", abs, err, out)
	}
	info := BinaryInfo{Path: abs}
	m := versionRE.FindSubmatch(out)
	if m == nil {
		return BinaryInfo{}, fmt.Errorf("%s -V does not print an nginx version:\n%s", abs, out)
	}
	info.Version = string(m[1])
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(line, "built with "):
			info.OpenSSL = strings.TrimSpace(line)
		case strings.HasPrefix(line, "configure arguments:"):
			info.Configure = strings.TrimSpace(strings.TrimPrefix(line, "configure arguments:"))
		}
	}
	if strings.Contains(info.Configure, "--without-http_gzip_module") {
		return info, fmt.Errorf("nginx binary %s: built --without-http_gzip_module; the benchmark needs gzip", abs)
	}
	if !strings.Contains(info.Configure, "--with-http_ssl_module") {
		return info, fmt.Errorf("nginx binary %s: built without --with-http_ssl_module; the benchmark needs TLS", abs)
	}
	return info, nil
}

// TempPaths lists the *_temp_path directives the binary accepts: each module that has one
// is compiled in unless configure said --without-http_<module>_module.
func (b BinaryInfo) TempPaths() []string {
	paths := []string{"client_body"}
	for _, m := range []string{"proxy", "fastcgi", "uwsgi", "scgi"} {
		if !strings.Contains(b.Configure, "--without-http_"+m+"_module") {
			paths = append(paths, m)
		}
	}
	return paths
}

// server is a running nginx under test.
type server struct {
	Name    string
	Config  Config
	cmd     *exec.Cmd
	done    chan struct{}
	stderr  bytes.Buffer
	waitErr error
}

// PID is the master's process id.
func (s *server) PID() int { return s.cmd.Process.Pid }

// startServer writes c's nginx.conf under c.Prefix, checks it with `nginx -t`, and starts
// bin in the foreground (-p prefix -c conf -g 'daemon off;'), pinned to cpus when given. It
// returns once both ports accept connections, or an error with nginx's own messages.
func startServer(ctx context.Context, name, bin string, c Config, cpus []int) (*server, error) {
	for _, d := range []string{c.Prefix, filepath.Join(c.Prefix, "conf"), filepath.Join(c.Prefix, "logs"), filepath.Join(c.Prefix, "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("server %s: %w", name, err)
		}
	}
	conf, err := c.Render()
	if err != nil {
		return nil, fmt.Errorf("server %s: %w", name, err)
	}
	confPath := filepath.Join(c.Prefix, "conf", "nginx.conf")
	if err := os.WriteFile(confPath, conf, 0o644); err != nil {
		return nil, fmt.Errorf("server %s: %w", name, err)
	}
	base := []string{bin, "-p", c.Prefix + "/", "-c", confPath}
	tctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	out, err := exec.CommandContext(tctx, base[0], append(base[1:], "-t", "-q")...).CombinedOutput()
	cancel()
	if err != nil {
		return nil, fmt.Errorf("server %s: %s -t rejects the benchmark config %s: %w\n%s", name, bin, confPath, err, out)
	}

	args := pinned(cpus, append(base, "-g", "daemon off;"))
	s := &server{Name: name, Config: c, done: make(chan struct{})}
	// Not CommandContext: the server is stopped gracefully by Stop, and its own process group
	// lets Stop reach the workers too if the master does not exit.
	s.cmd = exec.Command(args[0], args[1:]...)
	s.cmd.Stderr = &s.stderr
	s.cmd.Stdout = &s.stderr
	if c.Profile != nil {
		// An out-of-box config may log every request to /dev/stdout: a pipe the bench
		// drains, as a container runtime does, instead of a buffer that grows.
		s.cmd.Stdout = io.Discard
	}
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("server %s: starting %s: %w", name, bin, err)
	}
	go func() { s.waitErr = s.cmd.Wait(); close(s.done) }()

	deadline := time.Now().Add(15 * time.Second)
	for _, port := range []int{c.HTTPPort, c.HTTPSPort, c.FullHandshakePort} {
		if port == 0 {
			continue
		}
		for {
			conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
			if err == nil {
				conn.Close()
				break
			}
			select {
			case <-s.done:
				return nil, fmt.Errorf("server %s: %s exited at start: %v\n%s%s", name, bin, s.waitErr, s.stderr.Bytes(), s.errorLog())
			case <-ctx.Done():
				s.Stop()
				return nil, ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				s.Stop()
				return nil, fmt.Errorf("server %s: port %d not accepting connections after 15s\n%s", name, port, s.errorLog())
			}
		}
	}
	// The master accepts nothing itself; wait for the workers to exist so that the first CPU
	// snapshot sees them.
	for time.Now().Before(deadline) {
		if n, _ := countChildren(s.PID()); n > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return s, nil
}

func (s *server) errorLog() []byte {
	b, _ := os.ReadFile(filepath.Join(s.Config.Prefix, "logs", "error.log"))
	return b
}

// ErrorLog is the server's error.log so far (warnings and worse).
func (s *server) ErrorLog() string { return string(s.errorLog()) }

// Alive reports whether the master is still running.
func (s *server) Alive() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// Stop ends the server: SIGQUIT (graceful), then SIGKILL to its whole process group after 5 s.
func (s *server) Stop() error {
	if s == nil || s.cmd == nil || s.cmd.Process == nil {
		return nil
	}
	if !s.Alive() {
		return nil
	}
	_ = s.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
		return fmt.Errorf("server %s did not stop within 5s of SIGQUIT; killed", s.Name)
	}
	// Workers are in the master's group; make sure none outlives it.
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	return nil
}

func countChildren(pid int) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		var p int
		if _, err := fmt.Sscanf(e.Name(), "%d", &p); err != nil {
			continue
		}
		if st, err := readProcStat(p); err == nil && st.PPID == pid {
			n++
		}
	}
	return n, nil
}

// workerUser is the user and group nginx workers switch to when the master runs as root.
func workerUser() (string, string, error) {
	if os.Geteuid() != 0 {
		return "", "", nil
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		return "", "", fmt.Errorf("looking up user nobody for the nginx workers: %w", err)
	}
	g, err := user.LookupGroupId(u.Gid)
	if err != nil {
		return "", "", fmt.Errorf("looking up the group of user nobody: %w", err)
	}
	return u.Username, g.Name, nil
}

var errStopped = errors.New("server stopped during the run")
