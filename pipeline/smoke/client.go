package smoke

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// ClientMain is the in-engine smoke client (pipeline/smoke/cmd/smokeclient): it parses the
// argv ClientRequest.Args builds, runs the suite (RunClient) and prints the report as JSON.
// Both sides of that argv live in this package, so they cannot drift apart. The exit status
// is 0 when every check passed, 1 when one failed (the report is still printed), 2 for a
// bad argv or a failure to get as far as a report.
func ClientMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	req, o, err := parseClientArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "smokeclient: %v\n", err)
		return 2
	}
	rep, err := RunClient(ctx, req, o)
	if err != nil {
		fmt.Fprintf(stderr, "smokeclient: %v\n", err)
		return 2
	}
	if err := rep.WriteJSON(stdout); err != nil {
		fmt.Fprintf(stderr, "smokeclient: writing the report: %v\n", err)
		return 2
	}
	if rep.Err() != nil {
		return 1
	}
	return 0
}

// maxCertFile bounds the certificate file the client reads.
const maxCertFile = 1 << 20

// parseClientArgs is the inverse of ClientRequest.Args, with the suite's options: the
// expected modules, the uid, the ports and the certificate to trust (for the
// name NewTLS's certificate is for). Versions are not compared: the client reports
// them, and the side that builds the argv compares them.
func parseClientArgs(args []string) (ClientRequest, Options, error) {
	fs := flag.NewFlagSet("smokeclient", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var req ClientRequest
	var start, asJSON bool
	fs.StringVar(&req.Address, FlagAddress, "", "the server's `host`")
	fs.StringVar(&req.TLSCA, FlagTLSCA, "", "the server's certificate `file` (PEM)")
	fs.Func(FlagExpectModules, "the configure `flags` the server was built with, comma-separated", func(v string) error {
		// The inverse of Args' strings.Join: set, even to "", is an expectation.
		req.ExpectModules = []string{}
		if v != "" {
			req.ExpectModules = strings.Split(v, ",")
		}
		return nil
	})
	fs.IntVar(&req.UID, FlagUID, 0, "the `uid` every server process must run as")
	fs.IntVar(&req.HTTPPort, FlagHTTPPort, 0, "the HTTP `port`")
	fs.IntVar(&req.HTTPSPort, FlagHTTPSPort, 0, "the HTTPS and QUIC `port`")
	fs.BoolVar(&start, FlagStart, false, "start the command after -- and observe it")
	fs.StringVar(&req.WatchRoot, FlagWatchRoot, "", "the `directory` that must not change while the server runs")
	fs.BoolVar(&asJSON, FlagJSON, false, "print the report as JSON (the only output)")
	fs.BoolVar(&req.Emulated, FlagEmulated, false, "the server runs under qemu-user: longer timeouts, and its missing Linux AIO tolerated")
	if err := fs.Parse(args); err != nil {
		return ClientRequest{}, Options{}, err
	}
	switch {
	case !start && fs.NArg() > 0:
		return ClientRequest{}, Options{}, fmt.Errorf("unexpected arguments %q (a command to start needs --%s)", fs.Args(), FlagStart)
	case start && fs.NArg() == 0:
		return ClientRequest{}, Options{}, errors.New("--" + FlagStart + " needs the command after --")
	case req.Address == "":
		return ClientRequest{}, Options{}, errors.New("--" + FlagAddress + " is required")
	case !asJSON:
		return ClientRequest{}, Options{}, errors.New("--" + FlagJSON + " is required: the report is read as JSON")
	}
	if start {
		req.Start = fs.Args()
	}
	o := Options{Expect: Expect{Modules: req.ExpectModules}, UID: req.UID, HTTPPort: req.HTTPPort, HTTPSPort: req.HTTPSPort, Emulated: req.Emulated}
	if req.TLSCA != "" {
		pem, err := readBounded(req.TLSCA, maxCertFile)
		if err != nil {
			return ClientRequest{}, Options{}, fmt.Errorf("--%s: %w", FlagTLSCA, err)
		}
		if o.TLS, err = TrustTLS(pem, serverName); err != nil {
			return ClientRequest{}, Options{}, fmt.Errorf("--%s %s: %w", FlagTLSCA, req.TLSCA, err)
		}
	}
	return req, o, nil
}

// readBounded reads a file of at most limit bytes.
func readBounded(name string, limit int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes: not a certificate", name, limit)
	}
	return b, nil
}
