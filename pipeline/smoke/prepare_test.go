package smoke

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

func TestWants(t *testing.T) {
	v := "configure arguments: --with-threads " + HTTP3ModuleFlag + " " + BrotliModuleFlag
	calls := 0
	nginxV := func() string { calls++; return v }
	for _, c := range []struct {
		name string
		e    Expect
		flag string
		want bool
	}{
		{"expected", Expect{Modules: []string{"--with-threads", HTTP3ModuleFlag}}, HTTP3ModuleFlag, true},
		{"not expected, though nginx -V has it", Expect{Modules: []string{"--with-threads"}}, HTTP3ModuleFlag, false},
		{"none expected (empty list)", Expect{Modules: []string{}}, BrotliModuleFlag, false},
		{"no expectation: nginx -V has it", Expect{}, BrotliModuleFlag, true},
		{"no expectation: nginx -V lacks it", Expect{}, moduleFlag("zstd"), false},
	} {
		calls = 0
		if got := c.e.Wants(c.flag, nginxV); got != c.want {
			t.Errorf("%s: Wants(%s) = %v, want %v", c.name, c.flag, got, c.want)
		}
		if wantCalls := map[bool]int{true: 0, false: 1}[c.e.Modules != nil]; calls != wantCalls {
			t.Errorf("%s: nginx -V read %d times, want %d (only when no modules are expected)", c.name, calls, wantCalls)
		}
	}
	if (Expect{}).Wants(HTTP3ModuleFlag, nil) {
		t.Error("no expectation and no nginx -V: wanted")
	}
	var planFlag string
	for _, m := range plan.Modules {
		if m.Name == plan.ModuleHTTP3 {
			planFlag = m.Flag
		}
	}
	if HTTP3ModuleFlag != planFlag || planFlag != "--with-http_v3_module" {
		t.Errorf("HTTP3ModuleFlag %q, plan's %q: nginx -V prints --with-http_v3_module", HTTP3ModuleFlag, planFlag)
	}
}

// TestPrepareTLS: the directory both runners mount at /etc/nginx/tls, from the shipped
// nginx.conf: enterable by the container's user, the key private, the certificate the one
// the suite trusts, tls.conf with QUIC exactly when HTTP/3 is wanted.
func TestPrepareTLS(t *testing.T) {
	conf, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "pipeline", "plan", "files", "nginx.conf"))
	if err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	for _, http3 := range []bool{true, false} {
		mat, dir, err := PrepareTLS(conf, http3, parent, os.Getuid(), os.Getgid(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Dir(dir) != parent {
			t.Errorf("directory %s is not under %s", dir, parent)
		}
		fi, err := os.Stat(dir)
		if err != nil || fi.Mode().Perm() != 0o755 {
			t.Errorf("directory %s: %v %v, want mode 0755", dir, fi.Mode(), err)
		}
		if fi, err := os.Stat(filepath.Join(dir, "tls.key")); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("tls.key: %v, want mode 0600", err)
		}
		crt, err := os.ReadFile(filepath.Join(dir, TLSCertFile))
		if err != nil {
			t.Fatal(err)
		}
		blk, _ := pem.Decode(crt)
		if blk == nil {
			t.Fatalf("%s is not PEM", TLSCertFile)
		}
		cert, err := x509.ParseCertificate(blk.Bytes)
		if err != nil || !cert.Equal(mat.Cert) {
			t.Errorf("%s is not the returned certificate (%v)", TLSCertFile, err)
		}
		tlsConf, err := os.ReadFile(filepath.Join(dir, "tls.conf"))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(tlsConf), "quic"); got != http3 {
			t.Errorf("http3 %v: tls.conf has QUIC lines: %v\n%s", http3, got, tlsConf)
		}
	}
	if _, _, err := PrepareTLS([]byte("http {}\n"), true, parent, 0, 0, nil); err == nil || !strings.Contains(err.Error(), "nginx.conf") {
		t.Errorf("nginx.conf without the tls.conf block: %v, want an error naming nginx.conf", err)
	}
	if left, _ := os.ReadDir(parent); len(left) != 2 {
		t.Errorf("%d entries under %s, want the 2 prepared directories (a failure leaves none)", len(left), parent)
	}
}
