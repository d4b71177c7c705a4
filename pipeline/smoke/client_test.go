package smoke_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/smoke"
)

// TestClientArgsRoundTrip: the client parses back exactly the request the engine's argv
// (ClientRequest.Args) carries, with the suite's options from it, in both modes; the
// certificate it names is trusted for the name PrepareTLS's certificate is for.
func TestClientArgsRoundTrip(t *testing.T) {
	mat, err := smoke.NewTLS()
	if err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(t.TempDir(), smoke.TLSCertFile)
	if err := os.WriteFile(ca, mat.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	mods := []string{"--with-http_ssl_module", "--with-http_v3_module"}
	for _, req := range []smoke.ClientRequest{
		{Address: "nginx", TLSCA: ca, ExpectModules: mods, UID: 65532},
		{Address: smoke.LoopbackHost, ExpectModules: []string{}, HTTPPort: 18080, HTTPSPort: 18443,
			Start: []string{"/usr/sbin/nginx", "-g", "daemon off;"}, WatchRoot: "/srv"},
		{Address: "127.0.0.2"},
		{Address: "nginx", UID: 65532, Emulated: true},
	} {
		got, o, err := smoke.ParseClientArgs(req.Args())
		if err != nil {
			t.Fatalf("ParseClientArgs(%q): %v", req.Args(), err)
		}
		if !reflect.DeepEqual(got, req) {
			t.Errorf("round trip of %q:\n got %+v\nwant %+v", req.Args(), got, req)
		}
		if !reflect.DeepEqual(o.Expect.Modules, req.ExpectModules) || o.UID != req.UID || o.HTTPPort != req.HTTPPort || o.HTTPSPort != req.HTTPSPort || o.Emulated != req.Emulated {
			t.Errorf("options of %q: %+v", req.Args(), o)
		}
		if o.Expect.Nginx != "" || o.Expect.OpenSSL != "" {
			t.Errorf("the client compares versions: %+v", o.Expect)
		}
		if (req.TLSCA != "") != (o.TLS != nil) || o.TLS != nil && o.TLS.ServerName != mat.ServerName {
			t.Errorf("TLS of %q: %+v", req.Args(), o.TLS)
		}
	}
}

// TestClientMainRefuses: an argv the engine would not build is a usage error (exit 2,
// nothing on stdout, which the engine reads as the report), before any server is contacted.
func TestClientMainRefuses(t *testing.T) {
	notPEM := filepath.Join(t.TempDir(), "x.crt")
	os.WriteFile(notPEM, []byte("not a certificate"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--json"}, "--address is required"},
		{[]string{"--address", "nginx"}, "--json is required"},
		{[]string{"--address", "nginx", "--json", "--start"}, "needs the command after --"},
		{[]string{"--address", "nginx", "--json", "extra"}, "unexpected arguments"},
		{[]string{"--address", "nginx", "--json", "--tls-ca", notPEM}, "no PEM certificate"},
		{[]string{"--address", "nginx", "--json", "--tls-ca", notPEM + ".absent"}, "--tls-ca"},
		{[]string{"smoke", "--address", "nginx", "--json"}, "unexpected arguments"},
	} {
		var stdout, stderr bytes.Buffer
		code := smoke.ClientMain(context.Background(), tc.args, &stdout, &stderr)
		if code != 2 || stdout.Len() != 0 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("ClientMain(%q) = %d, stdout %q, stderr %q; want 2, nothing, %q", tc.args, code, stdout.String(), stderr.String(), tc.want)
		}
	}
}
