// Package smoke checks a started nginx-forge container the way its users will meet it:
// the configuration nginx accepts, the versions and modules it was built with, HTTP on 8080,
// TLS 1.3 with HTTP/2 and HTTP/3 on 8443, the user it runs as, the read-only root, the
// absence of a shell, and the hardening of the binary and its dynamic needs (read with
// debug/elf from the image's files). The result is a table of named checks.
//
// The checks talk to a Target, so any runtime can be tested: pipeline/ocirun's Container
// (runc on this machine) satisfies it as is; the Dagger executor provides its own.
package smoke

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/toolbox"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
)

// Target is a started container of the image under test.
//
// Methods a runtime cannot provide (output, UDP, processes, mounts) return an error wrapping
// errors.ErrUnsupported, saying why: every check that needs one is then reported as skipped
// with that reason, never as passed or failed. This is the only way a runtime limits the
// suite; the report is never edited afterwards.
type Target interface {
	// Exec runs argv in the image's runtime environment (its user, mounts and read-only
	// root) and returns its output and exit status; err means it could not run at all. If
	// the server has exited, a runtime should run argv in a fresh container of the image,
	// so that `nginx -t` can say why the server died.
	Exec(ctx context.Context, argv ...string) (stdout, stderr []byte, exitCode int, err error)
	// Addr is the address at which the container's port is reached from DialContext and
	// ListenPacket sockets ("127.0.0.1:8080"; a runtime that forwards ports may remap it).
	// network is "tcp" or "udp".
	Addr(network string, port int) string
	// DialContext connects to an address returned by Addr.
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
	// ListenPacket opens a local UDP socket from which Addr("udp", port) is reachable.
	ListenPacket(ctx context.Context, network, address string) (net.PacketConn, error)
	// RootFS is a host directory holding the image's root filesystem (not the container's
	// mounts), for the static checks; "" if the runtime cannot provide one.
	RootFS() string
	// ProcStatus returns /proc/PID/status of every process in the container, init first.
	ProcStatus(ctx context.Context) ([]string, error)
	// MountInfo returns /proc/PID/mountinfo of the container's init.
	MountInfo(ctx context.Context) (string, error)
	// Logs is the container's stdout and stderr so far.
	Logs() ([]byte, error)
	// Exited reports whether the container has exited, and how.
	Exited() (bool, string)
}

// Status is a check's outcome.
type Status int

const (
	Pass Status = iota
	Fail
	Skip
)

func (s Status) String() string {
	switch s {
	case Pass:
		return "PASS"
	case Fail:
		return "FAIL"
	default:
		return "SKIP"
	}
}

// Result is one row of the table.
type Result struct {
	Name   string
	Status Status
	Detail string
	// Unobservable marks a Skip caused by a limit of the Target (a method that returned
	// ErrUnsupported, or no root filesystem): another observer may see it (Combine).
	Unobservable bool
}

// Report is the outcome of a run, in check order.
type Report struct {
	Results []Result
	// Interrupted is why the run stopped before its last check (a signal, a deadline): the
	// checks not run are in NotRun, not in Results, since not running is no verdict on the
	// image (an interrupted run once printed every unrun check as FAIL).
	Interrupted error
	NotRun      []string
}

// OK is true when no check failed.
func (r Report) OK() bool { return len(r.Failed()) == 0 }

// Failed names the failed checks.
func (r Report) Failed() []string {
	var names []string
	for _, res := range r.Results {
		if res.Status == Fail {
			names = append(names, res.Name)
		}
	}
	return names
}

// Result returns the named check's result.
func (r Report) Result(name string) (Result, bool) {
	for _, res := range r.Results {
		if res.Name == name {
			return res, true
		}
	}
	return Result{}, false
}

// Err is nil when every check passed, or an error naming the failed checks; an
// interrupted run says so, names the checks it did not run and wraps the cause.
func (r Report) Err() error {
	if r.Interrupted != nil {
		failed := ""
		if f := r.Failed(); len(f) > 0 {
			failed = "; failed before that: " + strings.Join(f, ", ")
		}
		return fmt.Errorf("smoke run interrupted after %d checks, %d not run (%s)%s: %w",
			len(r.Results), len(r.NotRun), strings.Join(r.NotRun, ", "), failed, r.Interrupted)
	}
	if f := r.Failed(); len(f) > 0 {
		return fmt.Errorf("smoke checks failed: %s", strings.Join(f, ", "))
	}
	return nil
}

// Print writes the table, columns aligned. Multi-line details are indented under their row.
func (r Report) Print(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tRESULT\tDETAIL")
	for _, res := range r.Results {
		first, rest, _ := strings.Cut(strings.TrimRight(res.Detail, "\n"), "\n")
		fmt.Fprintf(tw, "%s\t%s\t%s\n", res.Name, res.Status, first)
		for _, l := range strings.Split(rest, "\n") {
			if l != "" {
				fmt.Fprintf(tw, "\t\t  %s\n", l)
			}
		}
	}
	pass, fail, skip := r.Counts()
	fmt.Fprintf(tw, "\n%d passed, %d failed, %d skipped\n", pass, fail, skip)
	if r.Interrupted != nil {
		fmt.Fprintf(tw, "interrupted (%v): %d checks not run\n", r.Interrupted, len(r.NotRun))
	}
	return tw.Flush()
}

// Counts are the numbers of passed, failed and skipped checks.
func (r Report) Counts() (pass, fail, skip int) {
	for _, res := range r.Results {
		switch res.Status {
		case Pass:
			pass++
		case Fail:
			fail++
		default:
			skip++
		}
	}
	return pass, fail, skip
}

// Expect is what the image must be. Empty fields are not checked (the check says so).
type Expect struct {
	// Versions as in the lock: "1.26.3", "3.5.7", "10.46".
	Nginx, OpenSSL, PCRE2 string
	// AWSLC is AWS-LC's version ("5.5.0") for an image built with it instead of OpenSSL
	// (OpenSSL is then ""): nginx -V says "built with OpenSSL 1.1.1 (compatible; AWS-LC 5.5.0)".
	AWSLC string
	// Modules are the configure flags the build used (as in plan.Modules: "--with-threads",
	// "--with-http_v3_module", "--add-module=../ngx_brotli", ...). nginx -V must list exactly
	// these --with-* and --add-module flags. nil skips the comparison (the list found is
	// reported).
	Modules []string
	// Arch is the architecture (GOARCH: amd64, arm64) the binary must be built for: its ELF
	// machine, and that architecture's flags in its configure arguments (see checkArch). ""
	// reports what the binary is without comparing.
	Arch string
}

// Options configure Run.
type Options struct {
	Expect Expect
	// TLS is the material mounted at /etc/nginx/tls (see NewTLS); nil skips the TLS checks.
	TLS *TLS
	// UID is the user the processes must run as (default 65532, distroless "nonroot").
	UID int
	// Binary is nginx's path in the image (default /usr/sbin/nginx).
	Binary string
	// HTTPPort and HTTPSPort default to 8080 and 8443 (the runtime contract).
	HTTPPort, HTTPSPort int
	// StartTimeout bounds the wait for nginx to listen (default 20s); CheckTimeout bounds
	// every other check (default 15s).
	StartTimeout, CheckTimeout time.Duration
	// Emulated says the image runs under emulation (qemu-user through binfmt_misc: an arm64
	// image on an amd64 machine): StartTimeout and CheckTimeout are then scaled by
	// emulationTimeoutFactor, here and nowhere else.
	Emulated bool
	// Progress receives each check's result as it ends (progress.Checked) and, on the host
	// engine, the runc and umoci commands; nil discards.
	Progress progress.Sink
}

func (o *Options) defaults() {
	if o.Progress == nil {
		o.Progress = progress.Discard
	}
	if o.UID == 0 {
		o.UID = plan.Runtime.UID()
	}
	if o.Binary == "" {
		o.Binary = plan.Runtime.Binary
	}
	if o.HTTPPort == 0 {
		o.HTTPPort = plan.Runtime.HTTPPort
	}
	if o.HTTPSPort == 0 {
		o.HTTPSPort = plan.Runtime.HTTPSPort
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 20 * time.Second
	}
	if o.CheckTimeout == 0 {
		o.CheckTimeout = 15 * time.Second
	}
	if o.Emulated {
		o.StartTimeout *= emulationTimeoutFactor
		o.CheckTimeout *= emulationTimeoutFactor
	}
}

// emulationTimeoutFactor scales the smoke timeouts for an image run under qemu-user: the
// emulated nginx starts and answers several times slower than natively (TLS handshakes
// are the slowest part: public-key arithmetic, interpreted instruction by instruction).
// The checks' work is the same; only the time they may take grows.
const emulationTimeoutFactor = 5

// Check names, stable for scripts and tests.
const (
	CheckNoShell      = "no shell"
	CheckPIE          = "binary: PIE"
	CheckRELRO        = "binary: full RELRO"
	CheckCanary       = "binary: stack canary"
	CheckNX           = "binary: NX stack"
	CheckFortify      = "binary: fortified calls"
	CheckArch         = "binary: architecture"
	CheckDynamicNeeds = "dynamic needs"
	CheckConfig       = "nginx -t"
	CheckVersions     = "nginx -V versions"
	CheckModules      = "nginx -V modules"
	CheckHTTP         = "HTTP 200 on 8080"
	CheckHealthz      = "healthz"
	CheckGzip         = "gzip"
	CheckBrotli       = "brotli" // the module's name: encodingChecks
	CheckZstd         = "zstd"
	CheckTLS13        = "TLS 1.3 on 8443"
	CheckTLSVersions  = "TLS 1.2 on / 1.1 off"
	CheckResumption   = "TLS session resumption"
	CheckHTTP2        = "HTTP/2 (ALPN h2)"
	CheckHTTP3        = "HTTP/3 over QUIC"
	CheckUser         = "runs as 65532"
	CheckReadOnly     = "read-only root"
	CheckErrorLog     = "error log clean"
)

type check struct {
	name string
	run  func(ctx context.Context, r *runner) (Status, string)
}

type runner struct {
	t   Target
	o   Options
	ctx context.Context
	// ready is nil once 8080 accepted a connection, else why not.
	ready        error
	readyChecked bool
	// vOutput is `nginx -V`'s output, for the module decision of the HTTP/3 check.
	vOutput string
}

// Run runs every check against t and returns the table. It never stops early: a failed
// start still gets its static checks, and each check says why it failed.
func Run(ctx context.Context, t Target, o Options) Report {
	o.defaults()
	rec := &recorder{Target: t}
	r := &runner{t: rec, o: o, ctx: ctx}
	var rep Report
	for _, c := range r.checks(r.probeChecks(ctx)) {
		if ctx.Err() != nil {
			rep.Interrupted = context.Cause(ctx)
			rep.NotRun = append(rep.NotRun, c.name)
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, o.CheckTimeout)
		if c.name == CheckConfig || c.name == CheckHTTP {
			// The first check that waits for the server to listen (waitReady) may take
			// the start's time as well as its own.
			cctx, cancel = context.WithTimeout(ctx, o.StartTimeout+o.CheckTimeout)
		}
		start := time.Now()
		rec.hit = false
		st, detail := c.run(cctx, r)
		cancel()
		if ctx.Err() != nil && st != Pass {
			// Stopped mid-check: what it saw is the interruption, not the image.
			rep.Interrupted = context.Cause(ctx)
			rep.NotRun = append(rep.NotRun, c.name)
			continue
		}
		o.Progress.Send(progress.Checked{Name: c.name, Status: st.String(), Duration: time.Since(start).Round(time.Millisecond), Detail: firstLine(detail)})
		rep.Results = append(rep.Results, Result{Name: c.name, Status: st, Detail: detail, Unobservable: st == Skip && rec.hit})
	}
	return rep
}

// Checks names every check Run runs, in order, for an image without catalogue modules (each
// one it has adds its own check after the compression checks: probeChecks): a gate that
// requires every check to run counts them against this.
func Checks() []string {
	var names []string
	for _, c := range (&runner{}).checks(nil) {
		names = append(names, c.name)
	}
	return names
}

func (r *runner) checks(probes []check) []check {
	checks := []check{
		{CheckNoShell, checkNoShell},
		{CheckPIE, elfCheck(checkPIE)},
		{CheckRELRO, elfCheck(checkRELRO)},
		{CheckCanary, elfCheck(checkCanary)},
		{CheckNX, elfCheck(checkNX)},
		{CheckFortify, elfCheck(checkFortify)},
		{CheckArch, checkArch},
		{CheckDynamicNeeds, checkDynamicNeeds},
		{CheckConfig, checkConfig},
		{CheckVersions, checkVersions},
		{CheckModules, checkModules},
		{CheckHTTP, checkHTTP},
		{CheckHealthz, checkHealthz},
		{CheckGzip, checkGzip},
	}
	checks = append(checks, encodingChecks()...) // CheckBrotli, CheckZstd
	checks = append(checks, probes...)           // the catalogue modules the image has
	return append(checks, []check{
		{CheckTLS13, checkTLS13},
		{CheckTLSVersions, checkTLSVersions},
		{CheckResumption, checkResumption},
		{CheckHTTP2, checkHTTP2},
		{CheckHTTP3, checkHTTP3},
		{CheckUser, checkUser},
		{CheckReadOnly, checkReadOnly},
		{CheckErrorLog, checkErrorLog},
	}...)
}

// unsupported turns a runtime's ErrUnsupported into a skip.
func unsupported(err error) (Status, string, bool) {
	if errors.Is(err, errors.ErrUnsupported) {
		return Skip, "the runtime cannot tell: " + err.Error(), true
	}
	return Fail, "", false
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// tail is toolbox.Tail, under the name the checks (runtime.go) call it by.
func tail(s string, n int) string { return toolbox.Tail(s, n) }

// certPool is the pool trusting the test's CA.
func (r *runner) certPool() *x509.CertPool { return r.o.TLS.Pool }
