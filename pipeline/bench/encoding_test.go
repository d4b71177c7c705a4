package bench

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"
)

// A binary with the brotli module gets br turned on in /gz/ (at the shipped level); one
// without gets no brotli directive at all, which it would refuse.
func TestEncodingDirectives(t *testing.T) {
	withBr := BinaryInfo{Configure: "--prefix=/etc/nginx --with-threads --add-module=../ngx_brotli --with-cc-opt='-O2'"}
	if got := strings.Join(withBr.Encodings(), ","); got != "br" {
		t.Errorf("Encodings() = %q, want br", got)
	}
	if got := (BinaryInfo{Configure: "--with-http_ssl_module --add-module=/build/ngx_brotli_other"}).Encodings(); len(got) != 0 {
		t.Errorf("a different module path counted as the plan's brotli module: %v", got)
	}
	base := Config{Knobs: DefaultKnobs(), Prefix: "/p", Content: "/c", HTTPPort: 1, HTTPSPort: 2}
	plain, err := base.Render()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(plain), "brotli") || strings.Contains(string(plain), "zstd") {
		t.Errorf("config without encodings has brotli or zstd directives:\n%s", plain)
	}
	base.Encodings = []string{"br", "zstd"}
	conf, err := base.Render()
	if err != nil {
		t.Fatal(err)
	}
	gz := string(conf)[strings.Index(string(conf), "location /gz/"):]
	gz = gz[:strings.Index(gz, "}")]
	for _, want := range []string{"brotli on;", "brotli_types application/json;", "brotli_comp_level 4;", "zstd on;", "zstd_comp_level 3;"} {
		if !strings.Contains(gz, want) {
			t.Errorf("/gz/ location lacks %q:\n%s", want, gz)
		}
	}
}

// The modern-browser check takes whichever offered encoding the server chose, as long as the
// body decodes to exactly the JSON document.
func TestCheckModernBrowser(t *testing.T) {
	doc := jsonDocBytes()
	enc := func(name string, b []byte) []byte {
		var buf bytes.Buffer
		switch name {
		case "gzip":
			w := gzip.NewWriter(&buf)
			w.Write(b)
			w.Close()
		case "br":
			w := brotli.NewWriter(&buf)
			w.Write(b)
			w.Close()
		case "zstd":
			w, _ := zstd.NewWriter(&buf)
			w.Write(b)
			w.Close()
		default:
			return b
		}
		return buf.Bytes()
	}
	resp := func(ce string) *http.Response {
		h := http.Header{}
		if ce != "" {
			h.Set("Content-Encoding", ce)
		}
		return &http.Response{Header: h}
	}
	for _, e := range []string{"gzip", "br", "zstd"} {
		if err := checkModernBrowser(resp(e), enc(e, doc)); err != nil {
			t.Errorf("%s: %v", e, err)
		}
		if err := checkModernBrowser(resp(e), enc(e, append(append([]byte(nil), doc...), ' '))); err == nil {
			t.Errorf("%s: a body that decodes to something else passed", e)
		}
	}
	if err := checkModernBrowser(resp(""), doc); err == nil || !strings.Contains(err.Error(), `Content-Encoding ""`) {
		t.Errorf("an uncompressed answer: %v, want an error naming the encoding", err)
	}
	if err := checkModernBrowser(resp("br"), enc("gzip", doc)); err == nil {
		t.Error("a gzip body labelled br passed")
	}
}
