package smoke

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/toolbox"
)

// checkConfig runs `nginx -t` with the configuration the container has (its mounts).
//
// It first lets the server listen. `nginx -t` binds and listens on every port of the
// configuration (its test mode only keeps quiet about a port in use), and Exec runs it in
// the server's network namespace: started before the server has bound its ports, it holds
// them for a moment, and the server's own bind fails ("bind() ... failed (98: Address
// already in use)" at emerg, then retried), which the error log check rightly fails. A
// server that never listens still gets its `nginx -t`, which then says why.
func checkConfig(ctx context.Context, r *runner) (Status, string) {
	_ = r.waitReady(ctx)
	so, se, code, err := r.t.Exec(ctx, r.o.Binary, "-t")
	out := strings.TrimSpace(string(so) + string(se))
	if err != nil {
		if st, d, ok := unsupported(err); ok {
			return st, d
		}
		return Fail, "could not run nginx -t: " + err.Error()
	}
	if code != 0 {
		return Fail, fmt.Sprintf("exit status %d:\n%s", code, tail(out, 1500))
	}
	return Pass, lastLine(out)
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// nginxV runs `nginx -V` once and keeps its output.
func (r *runner) nginxV(ctx context.Context) (string, error) {
	if r.vOutput != "" {
		return r.vOutput, nil
	}
	so, se, code, err := r.t.Exec(ctx, r.o.Binary, "-V")
	if err != nil {
		return "", err
	}
	out := string(so) + string(se)
	if code != 0 {
		return "", fmt.Errorf("nginx -V: exit status %d: %s", code, tail(out, 500))
	}
	r.vOutput = out
	return out, nil
}

var (
	reNginxVersion = regexp.MustCompile(`nginx version: nginx/(\S+)`)
	reOpenSSL      = regexp.MustCompile(`built with OpenSSL (\S+)`)
	reRunningSSL   = regexp.MustCompile(`running with OpenSSL (\S+)`)
	reRunningAWSLC = regexp.MustCompile(`running with AWS-LC ([^\s)]+)`)
	reAWSLC        = regexp.MustCompile(`built with OpenSSL \S+ \(compatible; AWS-LC (\S+)\)`)
	// pcre2_config(PCRE2_CONFIG_VERSION) returns "10.46 2025-08-27"; the string is compiled
	// into every binary that calls pcre2_config (nginx does, to ask about JIT).
	rePCRE2Version = regexp.MustCompile(`\x00(10\.\d+) (20\d\d-\d\d-\d\d)\x00`)
)

// checkVersions compares nginx -V's nginx and OpenSSL versions with the lock, and the
// PCRE2 version compiled into the binary (nginx -V does not print it for a static PCRE2).
func checkVersions(ctx context.Context, r *runner) (Status, string) {
	out, err := r.nginxV(ctx)
	if err != nil {
		if st, d, ok := unsupported(err); ok {
			return st, d
		}
		return Fail, err.Error()
	}
	var problems, got []string
	compare := func(what, want, have string) {
		switch {
		case have == "":
			problems = append(problems, what+" version not found")
		case want != "" && have != want:
			problems = append(problems, fmt.Sprintf("%s %s, want %s", what, have, want))
		default:
			got = append(got, what+" "+have)
		}
	}
	compare("nginx", r.o.Expect.Nginx, submatch(reNginxVersion, out))
	if r.o.Expect.AWSLC != "" {
		compare("AWS-LC", r.o.Expect.AWSLC, submatch(reAWSLC, out))
		// nginx adds "(running with AWS-LC X)" because AWS-LC's version text differs from
		// its OpenSSL-compatible one; with a static AWS-LC, X is the version built with.
		if run := submatch(reRunningAWSLC, out); run != "" && run != r.o.Expect.AWSLC {
			problems = append(problems, "running with AWS-LC "+run+", built with "+r.o.Expect.AWSLC)
		}
	} else {
		compare("OpenSSL", r.o.Expect.OpenSSL, submatch(reOpenSSL, out))
	}
	if run := submatch(reRunningSSL, out); run != "" {
		problems = append(problems, "OpenSSL is linked dynamically (running with "+run+"): the image must carry its own static OpenSSL")
	}
	pcre := "" // from the binary, when there is a root filesystem
	if root := r.t.RootFS(); root != "" {
		if p, err := resolveIn(root, r.o.Binary); err == nil {
			if data, err := os.ReadFile(p); err == nil {
				if m := rePCRE2Version.FindSubmatch(data); m != nil {
					pcre = string(m[1])
				}
			}
		}
		compare("PCRE2", r.o.Expect.PCRE2, pcre)
	} else if r.o.Expect.PCRE2 != "" {
		problems = append(problems, "PCRE2 version not checked: the runtime gives no root filesystem")
	}
	if e := r.o.Expect; e.Nginx == "" && e.OpenSSL == "" && e.AWSLC == "" && e.PCRE2 == "" {
		got = append(got, "(no versions expected: pass --expect-lock to compare)")
	}
	if len(problems) > 0 {
		return Fail, strings.Join(problems, "; ")
	}
	return Pass, strings.Join(got, ", ")
}

func submatch(re *regexp.Regexp, s string) string {
	if m := re.FindStringSubmatch(s); m != nil {
		return m[1]
	}
	return ""
}

// configureFlags returns the --with-*/--without-* flags without a value from nginx -V's
// configure arguments: the modules (and features such as threads) compiled in or out.
func configureFlags(v string) []string {
	_, args, ok := strings.Cut(v, "configure arguments:")
	if !ok {
		return nil
	}
	args, _, _ = strings.Cut(args, "\n")
	var flags []string
	for _, f := range strings.Fields(args) {
		if strings.HasPrefix(f, "--with-") && !strings.Contains(f, "=") || strings.HasPrefix(f, "--add-module=") {
			flags = append(flags, f)
		}
	}
	sort.Strings(flags)
	return flags
}

func checkModules(ctx context.Context, r *runner) (Status, string) {
	out, err := r.nginxV(ctx)
	if err != nil {
		if st, d, ok := unsupported(err); ok {
			return st, d
		}
		return Fail, err.Error()
	}
	have := configureFlags(out)
	if r.o.Expect.Modules == nil {
		return Pass, fmt.Sprintf("%d (none expected): %s", len(have), strings.Join(have, " "))
	}
	haveSet := map[string]bool{}
	for _, f := range have {
		haveSet[f] = true
	}
	wantSet := map[string]bool{}
	var missing, extra []string
	for _, f := range r.o.Expect.Modules {
		wantSet[f] = true
		if !haveSet[f] {
			missing = append(missing, f)
		}
	}
	for _, f := range have {
		if !wantSet[f] {
			extra = append(extra, f)
		}
	}
	sort.Strings(missing)
	var problems []string
	if len(missing) > 0 {
		problems = append(problems, "missing: "+strings.Join(missing, " "))
	}
	if len(extra) > 0 {
		problems = append(problems, "not expected: "+strings.Join(extra, " "))
	}
	if len(problems) > 0 {
		return Fail, strings.Join(problems, "; ")
	}
	return Pass, fmt.Sprintf("all %d: %s", len(have), strings.Join(have, " "))
}

// notRunning explains a dead container, with the end of its output.
func (r *runner) notRunning() string {
	if exited, how := r.t.Exited(); exited {
		return "the container " + how + "; its output:\n" + r.outputTail()
	}
	return ""
}

// outputTail is the end of the container's output, or why the runtime cannot show it.
func (r *runner) outputTail() string {
	logs, err := r.t.Logs()
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return tail(string(logs), 1500)
}

// waitReady waits until the HTTP port accepts connections (once per run).
func (r *runner) waitReady(ctx context.Context) error {
	if r.readyChecked {
		return r.ready
	}
	r.readyChecked = true
	addr := r.t.Addr("tcp", r.o.HTTPPort)
	deadline := time.Now().Add(r.o.StartTimeout)
	var last error
	for time.Now().Before(deadline) {
		if why := r.notRunning(); why != "" {
			r.ready = errors.New(why)
			return r.ready
		}
		c, err := r.t.DialContext(ctx, "tcp", addr)
		if err == nil {
			c.Close()
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			r.ready = fmt.Errorf("waiting for %s: %w", addr, ctx.Err())
			return r.ready
		case <-time.After(50 * time.Millisecond):
		}
	}
	r.ready = fmt.Errorf("nothing listened on %s within %s: %v\noutput:\n%s", addr, r.o.StartTimeout, last, r.outputTail())
	return r.ready
}

func (r *runner) httpClient(tr *http.Transport) *http.Client {
	if tr == nil {
		tr = &http.Transport{}
	}
	tr.DialContext = r.t.DialContext
	tr.DisableCompression = true
	return &http.Client{Transport: tr, Timeout: r.o.CheckTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func (r *runner) get(ctx context.Context, c *http.Client, url string, hdr map[string]string) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, nil, err
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp, body, err
}

func checkHTTP(ctx context.Context, r *runner) (Status, string) {
	if err := r.waitReady(ctx); err != nil {
		return Fail, err.Error()
	}
	c := r.httpClient(nil)
	defer c.CloseIdleConnections()
	resp, body, err := r.get(ctx, c, "http://"+r.t.Addr("tcp", r.o.HTTPPort)+"/", nil)
	if err != nil {
		return Fail, err.Error()
	}
	if resp.StatusCode != http.StatusOK {
		return Fail, fmt.Sprintf("GET / answered %s", resp.Status)
	}
	return Pass, fmt.Sprintf("GET / %s, %d bytes, %s", resp.Status, len(body), resp.Header.Get("Content-Type"))
}

func checkHealthz(ctx context.Context, r *runner) (Status, string) {
	if err := r.waitReady(ctx); err != nil {
		return Fail, "not listening (see " + CheckHTTP + ")"
	}
	c := r.httpClient(nil)
	defer c.CloseIdleConnections()
	resp, body, err := r.get(ctx, c, "http://"+r.t.Addr("tcp", r.o.HTTPPort)+"/healthz", nil)
	if err != nil {
		return Fail, err.Error()
	}
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != "ok" {
		return Fail, fmt.Sprintf("GET /healthz answered %s %q", resp.Status, tail(string(body), 100))
	}
	return Pass, "GET /healthz 200 ok"
}

// checkGzip: text is compressed for clients that accept it.
func checkGzip(ctx context.Context, r *runner) (Status, string) {
	plain, resp, body, err := r.getEncoded(ctx, "gzip")
	if err != nil {
		return Fail, err.Error()
	}
	if ce := resp.Header.Get("Content-Encoding"); ce != "gzip" {
		return Fail, fmt.Sprintf("GET / with Accept-Encoding: gzip (%d bytes of %s) answered Content-Encoding %q", len(plain), resp.Header.Get("Content-Type"), ce)
	}
	un, err := toolbox.Decode("gzip", body)
	if err != nil {
		return Fail, "response is not gzip: " + err.Error()
	}
	if !bytes.Equal(un, plain) {
		return Fail, "gzip body does not decompress to the plain page"
	}
	return Pass, fmt.Sprintf("%d -> %d bytes, Vary: %s", len(plain), len(body), resp.Header.Get("Vary"))
}

// checkUser: every process (master and workers) runs as the unprivileged user, with real,
// effective, saved and filesystem ids all equal to it.
func checkUser(ctx context.Context, r *runner) (Status, string) {
	if why := r.notRunning(); why != "" {
		return Fail, why
	}
	st, err := r.t.ProcStatus(ctx)
	if err != nil {
		if s, d, ok := unsupported(err); ok {
			return s, d
		}
		return Fail, err.Error()
	}
	want := strconv.Itoa(r.o.UID)
	var bad, names []string
	for _, s := range st {
		name, uids, gids := statusField(s, "Name"), strings.Fields(statusField(s, "Uid")), strings.Fields(statusField(s, "Gid"))
		names = append(names, name)
		for _, u := range uids {
			if u != want {
				bad = append(bad, fmt.Sprintf("%s (pid %s) has Uid %s", name, statusField(s, "Pid"), strings.Join(uids, " ")))
				break
			}
		}
		for _, g := range gids {
			if g == "0" {
				bad = append(bad, fmt.Sprintf("%s (pid %s) has Gid %s", name, statusField(s, "Pid"), strings.Join(gids, " ")))
				break
			}
		}
	}
	if len(bad) > 0 {
		return Fail, strings.Join(bad, "; ")
	}
	return Pass, fmt.Sprintf("%d processes (%s), all uid %s", len(st), strings.Join(dedupe(names), ", "), want)
}

func statusField(status, key string) string {
	for _, l := range strings.Split(status, "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && k == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// checkReadOnly: the container's / is mounted read-only (mountinfo field 6 is the
// mount's own options).
func checkReadOnly(ctx context.Context, r *runner) (Status, string) {
	if why := r.notRunning(); why != "" {
		return Fail, why
	}
	mi, err := r.t.MountInfo(ctx)
	if err != nil {
		if s, d, ok := unsupported(err); ok {
			return s, d
		}
		return Fail, err.Error()
	}
	var rootOpts string
	var writable []string
	for _, l := range strings.Split(mi, "\n") {
		f := strings.Fields(l)
		if len(f) < 6 {
			continue
		}
		if f[4] == "/" {
			rootOpts = f[5] // the last mount on / wins
		}
		if opts := strings.Split(f[5], ","); opts[0] == "rw" && !strings.HasPrefix(f[4], "/proc") &&
			!strings.HasPrefix(f[4], "/dev") && !strings.HasPrefix(f[4], "/sys") {
			writable = append(writable, f[4])
		}
	}
	if rootOpts == "" {
		return Fail, "no / mount in the container's mountinfo"
	}
	if strings.Split(rootOpts, ",")[0] != "ro" {
		return Fail, "/ is mounted " + rootOpts
	}
	sort.Strings(writable)
	return Pass, "/ mounted " + rootOpts + "; writable: " + strings.Join(writable, " ")
}

// checkErrorLog: nginx said nothing at the emerg, alert or crit levels (a failed
// setrlimit, a refused listener...).
func checkErrorLog(ctx context.Context, r *runner) (Status, string) {
	out, err := r.t.Logs()
	if err != nil {
		if st, d, ok := unsupported(err); ok {
			return st, d
		}
		return Fail, "reading the container's output: " + err.Error()
	}
	logs := string(out)
	var bad []string
	tolerated := 0
	for _, l := range strings.Split(logs, "\n") {
		if !strings.Contains(l, "[emerg]") && !strings.Contains(l, "[alert]") && !strings.Contains(l, "[crit]") {
			continue
		}
		if r.o.Emulated && strings.Contains(l, emulatorAIOLine) {
			tolerated++
			continue
		}
		bad = append(bad, l)
	}
	if len(bad) > 0 {
		return Fail, strings.Join(bad, "\n")
	}
	if why := r.notRunning(); why != "" {
		return Fail, why
	}
	detail := fmt.Sprintf("%d lines, no emerg/alert/crit", strings.Count(logs, "\n"))
	if tolerated > 0 {
		detail += fmt.Sprintf(" (under emulation, %d %q lines: qemu-user has no Linux AIO; nginx then serves without it)", tolerated, emulatorAIOLine)
	}
	return Pass, detail
}

// emulatorAIOLine is what nginx built --with-file-aio logs once per worker when the kernel
// has no Linux AIO, as qemu-user (which runs another architecture's image here) does not
// implement io_setup: nginx then serves without AIO. Only an emulated run (Options.Emulated)
// tolerates it; on a real kernel it is a finding.
const emulatorAIOLine = "io_setup() failed (38: Function not implemented)"
