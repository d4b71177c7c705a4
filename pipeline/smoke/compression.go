package smoke

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/toolbox"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
)

// BrotliModuleFlag is the configure flag of the brotli module (pipeline/plan's "brotli", a
// row of the component table), as the plan writes it and nginx -V prints it.
var BrotliModuleFlag = moduleFlag("brotli")

// encodingFlag is the configure flag of the module serving encoding (plan.Module.Encoding,
// from the component table).
func encodingFlag(encoding string) string {
	for _, m := range plan.Modules {
		if m.Encoding == encoding {
			return m.Flag
		}
	}
	panic("smoke: plan.Modules has no module serving " + encoding)
}

// encodingChecks are the checks of the third-party compression modules, one per module
// that serves an encoding, named after the module (CheckBrotli, CheckZstd), in the
// component table's order.
func encodingChecks() []check {
	var out []check
	for _, m := range plan.Modules {
		if m.Encoding != "" {
			out = append(out, check{m.Name, encodingCheck(m.Encoding)})
		}
	}
	return out
}

// encodingCheck asks for GET / with only this encoding acceptable and requires that
// Content-Encoding names it, that the body decodes to exactly the plain page, and that the
// response carries one Vary: Accept-Encoding (caches must key on it). An image built
// without the module passes when it does not answer with the encoding.
func encodingCheck(encoding string) func(ctx context.Context, r *runner) (Status, string) {
	flag := encodingFlag(encoding)
	return func(ctx context.Context, r *runner) (Status, string) {
		plain, resp, body, err := r.getEncoded(ctx, encoding)
		if err != nil {
			return Fail, err.Error()
		}
		wanted := r.moduleWanted(ctx, flag)
		ce := resp.Header.Get("Content-Encoding")
		if !wanted {
			if ce == encoding {
				return Fail, fmt.Sprintf("answered Content-Encoding %s, but the image is not expected to have %s", ce, flag)
			}
			// Passed, not skipped: an image built without the module is checked too (it must
			// not claim the encoding), and CI treats any skipped check as a failure.
			return Pass, fmt.Sprintf("not built with %s (not expected): Accept-Encoding: %s answered Content-Encoding %q, not %s", flag, encoding, ce, encoding)
		}
		if ce != encoding {
			return Fail, fmt.Sprintf("GET / with Accept-Encoding: %s (%d bytes of %s) answered Content-Encoding %q", encoding, len(plain), resp.Header.Get("Content-Type"), ce)
		}
		un, err := toolbox.Decode(encoding, body)
		if err != nil {
			return Fail, fmt.Sprintf("the %s body (%d bytes) does not decode: %v", encoding, len(body), err)
		}
		if !bytes.Equal(un, plain) {
			return Fail, fmt.Sprintf("the %s body decodes to %d bytes that differ from the plain page's %d", encoding, len(un), len(plain))
		}
		if v := resp.Header.Values("Vary"); len(v) != 1 || !strings.EqualFold(v[0], "Accept-Encoding") {
			return Fail, fmt.Sprintf("Vary is %q, want exactly one Vary: Accept-Encoding", v)
		}
		return Pass, fmt.Sprintf("%d -> %d bytes, Vary: %s", len(plain), len(body), resp.Header.Get("Vary"))
	}
}

// getEncoded waits for the server, then asks for GET / plainly and with only encoding
// acceptable: the plain page, and the encoded response with its body.
func (r *runner) getEncoded(ctx context.Context, encoding string) (plain []byte, resp *http.Response, body []byte, err error) {
	if err := r.waitReady(ctx); err != nil {
		return nil, nil, nil, errors.New("not listening (see " + CheckHTTP + ")")
	}
	c := r.httpClient(nil)
	defer c.CloseIdleConnections()
	url := "http://" + r.t.Addr("tcp", r.o.HTTPPort) + "/"
	if _, plain, err = r.get(ctx, c, url, nil); err != nil {
		return nil, nil, nil, err
	}
	resp, body, err = r.get(ctx, c, url, map[string]string{"Accept-Encoding": encoding})
	return plain, resp, body, err
}
