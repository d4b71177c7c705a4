package smoke_test

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"

	"github.com/nginx-forge/nginx-forge/pipeline/smoke"
)

var page = []byte(strings.Repeat("<p>nginx-forge smoke page</p>\n", 40))

func encode(t *testing.T, enc string, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	switch enc {
	case "br":
		w := brotli.NewWriterLevel(&buf, 4)
		w.Write(b)
		w.Close()
	case "zstd":
		w, err := zstd.NewWriter(&buf)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(b)
		w.Close()
	}
	return buf.Bytes()
}

// serve answers GET / on loopback: plain without Accept-Encoding, else what answer writes.
func serve(t *testing.T, answer func(w http.ResponseWriter, acceptEncoding string)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		if ae := r.Header.Get("Accept-Encoding"); ae != "" {
			answer(w, ae)
			return
		}
		w.Write(page)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

// The br and zstd checks pass only on the right Content-Encoding, a body that decodes to
// exactly the plain page, and one Vary: Accept-Encoding; without the module expected, they
// pass only if the server does not answer with the encoding.
func TestEncodingChecks(t *testing.T) {
	for _, enc := range []string{"br", "zstd"} {
		check := map[string]string{"br": smoke.CheckBrotli, "zstd": smoke.CheckZstd}[enc]
		flag := map[string]string{"br": smoke.BrotliModuleFlag, "zstd": smoke.ZstdModuleFlag}[enc]
		good := encode(t, enc, page)
		other := encode(t, enc, append(append([]byte(nil), page...), '!'))
		for _, tc := range []struct {
			name   string
			built  bool
			answer func(w http.ResponseWriter, ae string)
			want   smoke.Status
			detail string
		}{
			{"right", true, func(w http.ResponseWriter, ae string) {
				w.Header().Set("Content-Encoding", ae)
				w.Header().Set("Vary", "Accept-Encoding")
				w.Write(good)
			}, smoke.Pass, "Vary: Accept-Encoding"},
			{"no encoding", true, func(w http.ResponseWriter, ae string) { w.Write(page) }, smoke.Fail, `Content-Encoding ""`},
			{"wrong content", true, func(w http.ResponseWriter, ae string) {
				w.Header().Set("Content-Encoding", ae)
				w.Header().Set("Vary", "Accept-Encoding")
				w.Write(other)
			}, smoke.Fail, "differ from the plain page"},
			{"not that encoding", true, func(w http.ResponseWriter, ae string) {
				w.Header().Set("Content-Encoding", ae)
				w.Header().Set("Vary", "Accept-Encoding")
				w.Write(page)
			}, smoke.Fail, "does not decode"},
			{"vary twice", true, func(w http.ResponseWriter, ae string) {
				w.Header().Set("Content-Encoding", ae)
				w.Header().Add("Vary", "Accept-Encoding")
				w.Header().Add("Vary", "Accept-Encoding")
				w.Write(good)
			}, smoke.Fail, "exactly one Vary"},
			{"no vary", true, func(w http.ResponseWriter, ae string) {
				w.Header().Set("Content-Encoding", ae)
				w.Write(good)
			}, smoke.Fail, "exactly one Vary"},
			{"not built", false, func(w http.ResponseWriter, ae string) { w.Write(page) }, smoke.Pass, "not built with " + flag},
			{"not built but answers", false, func(w http.ResponseWriter, ae string) {
				w.Header().Set("Content-Encoding", ae)
				w.Write(good)
			}, smoke.Fail, "not expected"},
		} {
			t.Run(enc+"/"+tc.name, func(t *testing.T) {
				addr := serve(t, tc.answer)
				mods := []string{"--with-threads"}
				if tc.built {
					mods = append(mods, flag)
				}
				o := smoke.Options{Expect: smoke.Expect{Modules: mods}}
				o.StartTimeout, o.CheckTimeout = 2e9, 2e9
				rep := smoke.Run(context.Background(), limitedTarget{addr: addr, logs: func() ([]byte, error) { return nil, errNoPeek }}, o)
				r, ok := rep.Result(check)
				if !ok {
					t.Fatalf("no %q in the report", check)
				}
				if r.Status != tc.want || !strings.Contains(r.Detail, tc.detail) {
					t.Errorf("%s: %s %q, want %s containing %q", check, r.Status, r.Detail, tc.want, tc.detail)
				}
			})
		}
	}
}
