package lock

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testLockFile is the parser tests' fixture: Debian trixie's releases as tarballs (nginx 1.26.3, OpenSSL 3.5.7,
// PCRE2 10.46, zlib 1.3.1) and the optional components, whose fields the tests mutate by
// position. It is no shipped lock's twin (those are stack.twin.lock.json and
// aws-lc.twin.lock.json, held to the shipped locks by TestShippedLocksAndTheirTwins), so the
// parser's tests do not move when the shipped stack does.
const testLockFile = "testdata/trixie.lock.json"

// mutate parses the test lock into generic JSON, lets edit change it, and returns the bytes.
func mutate(t *testing.T, edit func(m map[string]any)) []byte {
	t.Helper()
	b, err := os.ReadFile(testLockFile)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// comp returns the i-th component object (0 zlib, 1 pcre2, 2 openssl, 3 nginx, then the
// optional 4 brotli, 5 ngx_brotli, 6 zstd).
func comp(m map[string]any, i int) map[string]any {
	return m["components"].([]any)[i].(map[string]any)
}

func image(m map[string]any, which string) map[string]any {
	return m["images"].(map[string]any)[which].(map[string]any)
}

func TestParseRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(m map[string]any)
		// field is the *fieldError's Field; "" when the error comes from the JSON decoder.
		field string
		// want must appear in the message (the field's JSON name for decoder errors).
		want string
	}{
		{"unknown top-level field", func(m map[string]any) { m["mirror"] = "http://x" }, "", `"mirror"`},
		{"unknown component field", func(m map[string]any) { comp(m, 3)["sha265"] = "x" }, "", `"sha265"`},
		{"unknown signature field", func(m map[string]any) { comp(m, 2)["signature"].(map[string]any)["key"] = "x" }, "", `"key"`},
		{"wrong type", func(m map[string]any) { m["schema"] = "1" }, "", "schema"},
		{"schema", func(m map[string]any) { m["schema"] = 2 }, "schema", "schema 1"},
		{"epoch", func(m map[string]any) { m["source_date_epoch"] = 0 }, "source_date_epoch", "outside 1980-01-01 .. 2100-01-01"},
		{"version with letters", func(m map[string]any) { comp(m, 3)["version"] = "1.26.3a" }, "components[3] (nginx).version", "1.26.3a"},
		{"version with v", func(m map[string]any) { comp(m, 3)["version"] = "v1.26.3" }, "components[3] (nginx).version", "v1.26.3"},
		{"version single number", func(m map[string]any) { comp(m, 0)["version"] = "1" }, "components[0] (zlib).version", `"1"`},
		{"version empty", func(m map[string]any) { delete(comp(m, 1), "version") }, "components[1] (pcre2).version", `""`},
		{"checksum short", func(m map[string]any) { comp(m, 3)["sha256"] = strings.Repeat("a", 63) }, "components[3] (nginx).sha256", "64"},
		{"checksum long", func(m map[string]any) { comp(m, 3)["sha256"] = strings.Repeat("a", 65) }, "components[3] (nginx).sha256", "64"},
		{"checksum upper case", func(m map[string]any) { comp(m, 3)["sha256"] = strings.Repeat("A", 64) }, "components[3] (nginx).sha256", "lower-case"},
		{"checksum not hex", func(m map[string]any) { comp(m, 3)["sha256"] = strings.Repeat("g", 64) }, "components[3] (nginx).sha256", "hex"},
		{"checksum with prefix", func(m map[string]any) { comp(m, 3)["sha256"] = "sha256:" + strings.Repeat("a", 64) }, "components[3] (nginx).sha256", "hex"},
		{"http url", func(m map[string]any) { comp(m, 3)["url"] = "http://nginx.org/download/nginx-1.26.3.tar.gz" }, "components[3] (nginx).url", "https"},
		{"ftp url", func(m map[string]any) { comp(m, 3)["url"] = "ftp://nginx.org/nginx-1.26.3.tar.gz" }, "components[3] (nginx).url", "https"},
		{"relative url", func(m map[string]any) { comp(m, 3)["url"] = "nginx-1.26.3.tar.gz" }, "components[3] (nginx).url", "https"},
		{"url without host", func(m map[string]any) { comp(m, 3)["url"] = "https:///nginx-1.26.3.tar.gz" }, "components[3] (nginx).url", "file on a host"},
		{"url of a directory", func(m map[string]any) { comp(m, 3)["url"] = "https://nginx.org/download/" }, "components[3] (nginx).url", "file on a host"},
		{"url without path", func(m map[string]any) { comp(m, 3)["url"] = "https://nginx.org" }, "components[3] (nginx).url", "file on a host"},
		{"url ending in ..", func(m map[string]any) { comp(m, 3)["url"] = "https://nginx.org/download/.." }, "components[3] (nginx).url", "file on a host"},
		{"url with credentials", func(m map[string]any) {
			comp(m, 3)["url"] = "https://user:s3cret@nginx.org/download/nginx-1.26.3.tar.gz"
		}, "components[3] (nginx).url", "holds no credentials"},
		{"signature url with a user", func(m map[string]any) {
			comp(m, 2)["signature"].(map[string]any)["url"] = "https://token@github.com/openssl-3.5.7.tar.gz.asc"
		}, "components[2] (openssl).signature.url", "user information"},
		{"http signature url", func(m map[string]any) {
			comp(m, 2)["signature"].(map[string]any)["url"] = "http://github.com/openssl-3.5.7.tar.gz.asc"
		}, "components[2] (openssl).signature.url", "https"},
		{"fingerprint lower case", func(m map[string]any) {
			comp(m, 2)["signature"].(map[string]any)["fingerprints"] = []any{strings.ToLower("BA5473A2B0587B07FB27CF2D216094DFD0CB81EF")}
		}, "components[2] (openssl).signature.fingerprints[0]", "upper-case"},
		{"fingerprint short (key ID)", func(m map[string]any) {
			comp(m, 2)["signature"].(map[string]any)["fingerprints"] = []any{"BA5473A2B0587B07FB27CF2D216094DFD0CB81EF", "216094DFD0CB81EF"}
		}, "components[2] (openssl).signature.fingerprints[1]", "40-digit"},
		{"fingerprint with spaces", func(m map[string]any) {
			comp(m, 2)["signature"].(map[string]any)["fingerprints"] = []any{"BA54 73A2 B058 7B07 FB27  CF2D 2160 94DF D0CB 81EF"}
		}, "components[2] (openssl).signature.fingerprints[0]", "40-digit"},
		{"no fingerprints", func(m map[string]any) {
			comp(m, 2)["signature"].(map[string]any)["fingerprints"] = []any{}
		}, "components[2] (openssl).signature.fingerprints", "at least one"},
		{"unsigned with a signature", func(m map[string]any) { comp(m, 2)["unsigned"] = "no reason" }, "components[2] (openssl).unsigned", "together with a signature"},
		{"unsigned empty", func(m map[string]any) { comp(m, 3)["unsigned"] = "" }, "components[3] (nginx).unsigned", "say why"},
		{"unsigned blank", func(m map[string]any) { comp(m, 0)["unsigned"] = " \t" }, "components[0] (zlib).unsigned", "say why"},
		{"unsigned not text", func(m map[string]any) { comp(m, 0)["unsigned"] = true }, "", "unsigned"},
		{"duplicate component", func(m map[string]any) {
			cs := m["components"].([]any)
			m["components"] = append(cs, cs[0])
		}, "components[7] (zlib).name", "twice"},
		{"missing component", func(m map[string]any) {
			cs := m["components"].([]any)
			m["components"] = []any{cs[0], cs[2], cs[3]}
		}, "components", `"pcre2" is missing`},
		{"unknown component", func(m map[string]any) { comp(m, 1)["name"] = "pcre" }, "components[1] (pcre).name", `"pcre" is not one of`},
		{"version with other suffix", func(m map[string]any) { comp(m, 5)["version"] = "1.0.0beta" }, "components[5] (ngx_brotli).version", "1.0.0beta"},
		{"module without its library", func(m map[string]any) {
			cs := m["components"].([]any)
			m["components"] = append(cs[:4:4], cs[5:]...) // drops brotli, keeps ngx_brotli
		}, "components", `"ngx_brotli" needs component "brotli"`},
		{"builder digest not sha256", func(m map[string]any) { image(m, "builder")["digest"] = "sha512:" + strings.Repeat("a", 64) }, "images.builder.digest", "sha256:"},
		{"runtime digest short", func(m map[string]any) { image(m, "runtime")["digest"] = "sha256:abc" }, "images.runtime.digest", "sha256:abc"},
		{"runtime digest bare hex", func(m map[string]any) { image(m, "runtime")["digest"] = strings.Repeat("a", 64) }, "images.runtime.digest", "sha256:"},
		{"empty image ref", func(m map[string]any) { image(m, "runtime")["ref"] = "" }, "images.runtime.ref", "empty"},
		{"builder digest all zeros", func(m map[string]any) { image(m, "builder")["digest"] = "sha256:" + strings.Repeat("0", 64) }, "images.builder.digest", "all zeros"},
		{"runtime ref digest all zeros", func(m map[string]any) {
			image(m, "runtime")["ref"] = "gcr.io/distroless/base-nossl-debian13@sha256:" + strings.Repeat("0", 64)
		}, "images.runtime.ref", "crane digest gcr.io/distroless/base-nossl-debian13"},
		{"snapshot not an apt ID", func(m map[string]any) { image(m, "builder")["snapshot"] = "2026-12-01" }, "images.builder.snapshot", "YYYYMMDDTHHMMSSZ"},
		{"snapshot without Z", func(m map[string]any) { image(m, "builder")["snapshot"] = "20261201T000000" }, "images.builder.snapshot", "YYYYMMDDTHHMMSSZ"},
		{"snapshot not a real day", func(m map[string]any) { image(m, "builder")["snapshot"] = "20260231T000000Z" }, "images.builder.snapshot", "20260231T000000Z"},
		{"snapshot before the service", func(m map[string]any) { image(m, "builder")["snapshot"] = "20230228T235959Z" }, "images.builder.snapshot", "start on 2023-03-01"},
		{"snapshot past 2100", func(m map[string]any) { image(m, "builder")["snapshot"] = "21000101T000000Z" }, "images.builder.snapshot", "outside"},
		{"snapshot on the runtime", func(m map[string]any) { image(m, "runtime")["snapshot"] = "20261201T000000Z" }, "images.runtime.snapshot", "only the builder"},
		{"image ref with space", func(m map[string]any) { image(m, "builder")["ref"] = "ubuntu: 24.04" }, "images.builder.ref", "white space"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(mutate(t, tc.edit))
			if err == nil {
				t.Fatal("Parse accepted it")
			}
			var fe *fieldError
			if tc.field != "" {
				if !errors.As(err, &fe) {
					t.Fatalf("error is not a *fieldError: %v", err)
				}
				if fe.Field != tc.field {
					t.Errorf("Field = %q, want %q (%v)", fe.Field, tc.field, err)
				}
				if !strings.HasPrefix(err.Error(), tc.field+": ") {
					t.Errorf("message does not start with the field: %v", err)
				}
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error does not mention %q: %v", tc.want, err)
			}
		})
	}
}

func TestParseTrailingData(t *testing.T) {
	b, err := os.ReadFile(testLockFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, extra := range []string{"{}", "x", `"more"`} {
		if _, err := Parse(append(b, extra...)); err == nil || !strings.Contains(err.Error(), "trailing") {
			t.Errorf("trailing %q: err = %v, want a trailing-data error", extra, err)
		}
	}
	if _, err := Parse(append(b, "\n\n"...)); err != nil {
		t.Errorf("trailing white space refused: %v", err)
	}
}

func TestLoadNamesTheFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "bad.lock.json")
	if err := os.WriteFile(file, mutate(t, func(m map[string]any) { m["schema"] = 9 }), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(file)
	if err == nil || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "schema") {
		t.Errorf("err = %v, want the file name and the field", err)
	}
	var fe *fieldError
	if !errors.As(err, &fe) {
		t.Errorf("Load does not wrap the *fieldError: %v", err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.json")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: err = %v", err)
	}
}

// The shipped locks are written by Marshal: parsing and writing them back changes nothing,
// so a tool that rewrites a lock produces a diff of exactly what it changed.
func TestMarshalRoundTrip(t *testing.T) {
	for _, file := range []string{"stack.lock.json", testLockFile} {
		t.Run(file, func(t *testing.T) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			l, err := Parse(b)
			if err != nil {
				t.Fatal(err)
			}
			out, err := l.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out, b) {
				t.Errorf("Marshal(Parse(%s)) differs from the file:\n%s", file, out)
			}
			// Components come out in build order whatever order they went in.
			l.Components[0], l.Components[3] = l.Components[3], l.Components[0]
			l.Components[1], l.Components[2] = l.Components[2], l.Components[1]
			out, err = l.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out, b) {
				t.Errorf("Marshal of reordered components is not the stable form:\n%s", out)
			}
		})
	}
}

func TestWrite(t *testing.T) {
	l, err := Load(testLockFile)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "stack.lock.json")
	c := l.MustComponent(Nginx)
	c.Version = "1.26.4"
	l.SetComponent(c)
	if err := l.Write(file); err != nil {
		t.Fatal(err)
	}
	back, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if back.MustComponent(Nginx).Version != "1.26.4" {
		t.Errorf("written lock has nginx %s", back.MustComponent(Nginx).Version)
	}
	before, _ := os.ReadFile(file)

	c.SHA256 = "nope"
	l.SetComponent(c)
	err = l.Write(file)
	if err == nil || !strings.Contains(err.Error(), "sha256") || !strings.Contains(err.Error(), file) {
		t.Fatalf("Write of an invalid lock: err = %v", err)
	}
	after, _ := os.ReadFile(file)
	if !bytes.Equal(before, after) {
		t.Error("a refused Write changed the file")
	}
	ents, _ := os.ReadDir(filepath.Dir(file))
	if len(ents) != 1 {
		t.Errorf("Write left %d files in the directory, want 1", len(ents))
	}
}

func TestDefault(t *testing.T) {
	l := Default()
	want := map[string]string{Zlib: "1.3.1", PCRE2: "10.48", OpenSSL: "3.5.9", Nginx: "1.30.6"}
	for name, v := range want {
		c, ok := l.Component(name)
		if !ok {
			t.Fatalf("default lock has no %s", name)
		}
		if c.Version != v {
			t.Errorf("default %s is %s, want %s", name, c.Version, v)
		}
		if c.Signature == nil || len(c.Signature.Fingerprints) == 0 {
			t.Errorf("default %s has no pinned signers", name)
		}
		if !strings.Contains(c.URL, v) || !strings.HasPrefix(c.URL, "https://") {
			t.Errorf("default %s URL %s", name, c.URL)
		}
	}
	if l.MustComponent(PCRE2).SignatureFileName() != "pcre2-10.48.tar.gz.sig" {
		t.Errorf("PCRE2 signature file %q, want the .sig upstream ships", l.MustComponent(PCRE2).SignatureFileName())
	}
	if !strings.HasSuffix(l.Images.Runtime.Ref, "-debian13:nonroot") {
		t.Errorf("runtime image %s: a -debian12 base's glibc is too old for the ubuntu:24.04 build", l.Images.Runtime.Ref)
	}
	// Default returns a fresh copy: changing it does not change the next caller's.
	l.Components[0].Version = "9.9.9"
	if Default().Components[0].Version == "9.9.9" {
		t.Error("Default shares state between callers")
	}
}

func TestFileNames(t *testing.T) {
	l, err := Load(testLockFile)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][2]string{
		Zlib:    {"zlib_1.3.dfsg+really1.3.1.orig.tar.gz", ""},
		PCRE2:   {"pcre2-10.46.tar.gz", ""},
		OpenSSL: {"openssl-3.5.7.tar.gz", "openssl-3.5.7.tar.gz.asc"},
		Nginx:   {"nginx-1.26.3.tar.gz", ""},
	} {
		c := l.MustComponent(name)
		if c.FileName() != want[0] || c.SignatureFileName() != want[1] {
			t.Errorf("%s: FileName %q SignatureFileName %q, want %q %q", name, c.FileName(), c.SignatureFileName(), want[0], want[1])
		}
	}
}

func TestImagePinned(t *testing.T) {
	d := "sha256:" + strings.Repeat("a", 64)
	for _, tc := range []struct {
		img  Image
		want string
	}{
		{Image{Ref: "docker.io/library/ubuntu:24.04"}, "docker.io/library/ubuntu:24.04"},
		{Image{Ref: "docker.io/library/ubuntu:24.04", Digest: d}, "docker.io/library/ubuntu:24.04@" + d},
		{Image{Ref: "docker.io/library/ubuntu@sha256:" + strings.Repeat("b", 64), Digest: d}, "docker.io/library/ubuntu@" + d},
	} {
		if got := tc.img.Pinned(); got != tc.want {
			t.Errorf("%+v.Pinned() = %s, want %s", tc.img, got, tc.want)
		}
	}
}

func TestMustComponentPanicsOnUnknown(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("MustComponent of an unknown name did not panic")
		}
	}()
	Default().MustComponent("libressl")
}

// Components with neither a signature nor an "unsigned" reason are listed, in build order;
// the test lock gives every unsigned component a reason.
func TestUnsignedWithoutReason(t *testing.T) {
	l, err := Load(testLockFile)
	if err != nil {
		t.Fatal(err)
	}
	if got := l.UnsignedWithoutReason(); len(got) != 0 {
		t.Errorf("test lock: UnsignedWithoutReason() = %v, want none", got)
	}
	for _, name := range []string{Zlib, PCRE2, Nginx} {
		if c := l.MustComponent(name); c.Signature != nil || c.Unsigned == "" {
			t.Errorf("test lock: %s has signature %v and unsigned %q; want a reason and no signature", name, c.Signature, c.Unsigned)
		}
	}
	if got := Default().UnsignedWithoutReason(); len(got) != 0 {
		t.Errorf("default lock: UnsignedWithoutReason() = %v, want none (every component is signed)", got)
	}

	nginx := l.MustComponent(Nginx)
	nginx.Unsigned = ""
	l.SetComponent(nginx)
	openssl := l.MustComponent(OpenSSL)
	openssl.Signature = nil
	l.SetComponent(openssl)
	// Out of build order in the slice: the result is still in build order.
	l.Components[2], l.Components[3] = l.Components[3], l.Components[2]
	if got := l.UnsignedWithoutReason(); strings.Join(got, ",") != "openssl,nginx" {
		t.Errorf("UnsignedWithoutReason() = %v, want [openssl nginx]", got)
	}
}

// Optional components: a library alone is allowed (the plan builds nothing from it until its
// module is there), and they are written after the required ones, in optionalOrder.
func TestOptionalComponents(t *testing.T) {
	l, err := Load(testLockFile)
	if err != nil {
		t.Fatal(err)
	}
	if c := l.MustComponent(NgxBrotli); c.Version != "1.0.0rc" {
		t.Errorf("ngx_brotli version %q, want 1.0.0rc (an rc suffix is a valid version)", c.Version)
	}
	mod := Component{Name: ZstdNginxModule, Version: "0.1.1", URL: "https://example.org/zstd-nginx-module-0.1.1.tar.gz",
		SHA256: strings.Repeat("a", 64), Unsigned: "test"}
	l.Components = append([]Component{mod}, l.Components...)
	b, err := l.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(b)
	if err != nil {
		t.Fatalf("a lock with every optional component does not parse: %v", err)
	}
	var names []string
	for _, c := range back.Components {
		names = append(names, c.Name)
	}
	var want []string
	for _, n := range AllComponents() {
		// Not the other choices of zlib and TLS library, nor the modules this lock leaves out.
		if _, ok := back.Component(n); ok && n != ZlibNG && n != AWSLC {
			want = append(want, n)
		}
	}
	if got, want := strings.Join(names, " "), strings.Join(want, " "); got != want {
		t.Errorf("written order %q, want %q", got, want)
	}
	// A module's missing reason is reported like a required component's.
	mod.Unsigned = ""
	back.SetComponent(mod)
	if got := back.UnsignedWithoutReason(); strings.Join(got, ",") != ZstdNginxModule {
		t.Errorf("UnsignedWithoutReason() = %v, want [%s]", got, ZstdNginxModule)
	}
}

// A refused URL's message must not carry its password: errors are printed and logged.
func TestURLErrorsHidePasswords(t *testing.T) {
	for _, raw := range []string{
		"https://user:s3cret@nginx.org/download/nginx-1.26.3.tar.gz",
		"http://user:s3cret@nginx.org/download/nginx-1.26.3.tar.gz",
		"https://user:s3cret@nginx.org/%zz",
	} {
		err := checkURL(raw)
		if err == nil {
			t.Fatalf("checkURL(%q) accepted it", raw)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("checkURL(%q) error shows the password: %v", raw, err)
		}
	}
}

// A lock over maxSize is refused with the limit named, before it is decoded; a huge field
// within the limit is not quoted whole.
func TestSizeLimit(t *testing.T) {
	big := mutate(t, func(m map[string]any) { comp(m, 3)["version"] = strings.Repeat("9", maxSize) })
	file := filepath.Join(t.TempDir(), "big.lock.json")
	if err := os.WriteFile(file, big, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, parse := range map[string]func() error{
		"Load":  func() error { _, err := Load(file); return err },
		"Parse": func() error { _, err := Parse(big); return err },
	} {
		err := parse()
		var se *sizeError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), "1 MiB") || !strings.Contains(err.Error(), "1048576") {
			t.Errorf("%s of a %d-byte lock: %v; want a *sizeError naming the 1 MiB limit", name, len(big), err)
		}
		if err != nil && len(err.Error()) > 400 {
			t.Errorf("%s: the error is %d bytes long", name, len(err.Error()))
		}
	}
	// Just under the limit: the field is refused, and quoted only in part.
	under := mutate(t, func(m map[string]any) { comp(m, 3)["version"] = strings.Repeat("x", maxSize/2) })
	_, err := Parse(under)
	var fe *fieldError
	if !errors.As(err, &fe) || fe.Field != "components[3] (nginx).version" {
		t.Fatalf("err = %v, want the version field refused", err)
	}
	if n := len(err.Error()); n > 500 || !strings.Contains(err.Error(), "bytes in all") {
		t.Errorf("the error quotes %d bytes of a %d-byte field: %.200s", n, maxSize/2, err)
	}
}

// null and other JSON that is not an object get a message saying what the lock must be.
func TestNotAnObject(t *testing.T) {
	for in, what := range map[string]string{"null": "null", " null\n": "null", "[]": "array", `"x"`: "string",
		"42": "number", "true": "boolean", "": "empty", "  \n": "empty", "nul": "not JSON", "<xml/>": "not JSON"} {
		_, err := Parse([]byte(in))
		if err == nil || !strings.Contains(err.Error(), what) || !strings.Contains(err.Error(), "JSON object") {
			t.Errorf("Parse(%q) = %v; want it to say the lock is %s and must be a JSON object", in, err, what)
		}
		if err != nil && strings.Contains(err.Error(), "schema: is 0") {
			t.Errorf("Parse(%q) = %v: the zero lock's complaint", in, err)
		}
	}
}

// TestPinnedInTime: a builder pinned by digest with an archive snapshot is pinned in time;
// each pin missing is named by its field.
func TestPinnedInTime(t *testing.T) {
	l, err := Parse(mutate(t, func(m map[string]any) {
		image(m, "builder")["digest"] = "sha256:" + strings.Repeat("ab", 32)
		image(m, "builder")["snapshot"] = "20261201T000000Z"
	}))
	if err != nil {
		t.Fatal(err)
	}
	if !l.PinnedInTime() || len(l.MissingTimePins()) != 0 {
		t.Errorf("pinned builder %+v: PinnedInTime %v, missing %q", l.Images.Builder, l.PinnedInTime(), l.MissingTimePins())
	}
	l.Images.Builder.Snapshot = ""
	if l.PinnedInTime() || strings.Join(l.MissingTimePins(), ",") != "images.builder.snapshot" {
		t.Errorf("without a snapshot: PinnedInTime %v, missing %q", l.PinnedInTime(), l.MissingTimePins())
	}
	l.Images.Builder.Digest, l.Images.Builder.Snapshot = "", "20261201T000000Z"
	if l.PinnedInTime() || strings.Join(l.MissingTimePins(), ",") != "images.builder.digest" {
		t.Errorf("without a digest: PinnedInTime %v, missing %q", l.PinnedInTime(), l.MissingTimePins())
	}
}

// TestFollowed: a tag of its own is followed; without one, or with the digest in the ref,
// the image stays pinned.
func TestFollowed(t *testing.T) {
	d := "sha256:" + strings.Repeat("a", 64)
	for _, tc := range []struct {
		im   Image
		want string
	}{
		{Image{Ref: "docker.io/library/ubuntu:24.04", Digest: d}, "docker.io/library/ubuntu:24.04"},
		{Image{Ref: "docker.io/library/ubuntu:24.04"}, "docker.io/library/ubuntu:24.04"},
		{Image{Ref: "127.0.0.1:5000/mirror/ubuntu", Digest: d}, "127.0.0.1:5000/mirror/ubuntu@" + d},
		{Image{Ref: "docker.io/library/ubuntu@" + d}, "docker.io/library/ubuntu@" + d},
	} {
		if got := tc.im.Followed(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.im, got, tc.want)
		}
	}
}
