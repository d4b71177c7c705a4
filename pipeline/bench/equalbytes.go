package bench

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/toolbox"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
)

// gzip at equal bytes. Two gzip libraries at the same gzip_comp_level do not send the same
// bytes: zlib-ng's level 1 (deflate_quick) sends about a fifth more than zlib's on the
// bench's JSON, so a CPU ratio at equal levels compares unequal work. The gzip-equal-bytes
// scenario measures each server at its own level instead: the lowest whose response is no
// larger than the baseline's at nginx's default level, 1.

// referenceGzipLevel is the level whose baseline response bounds every server's bytes in
// gzip-equal-bytes: nginx's default gzip_comp_level, what a config that says nothing gets.
const referenceGzipLevel = 1

// maxGzipLevel is zlib's (and zlib-ng's) highest level; nginx accepts 1..9.
const maxGzipLevel = 9

// GzipLevels are the levels the benchmark's config has a location for (/gz1/ ... /gz9/).
func (c Config) GzipLevels() []int {
	l := make([]int, maxGzipLevel)
	for i := range l {
		l[i] = i + 1
	}
	return l
}

// gzipLevelPath is the JSON document under level's location (the /gz/ file, by alias).
func gzipLevelPath(level int) string {
	return fmt.Sprintf("gz%d/data.json", level)
}

// chooseGzipLevel returns the lowest level (1-based: sizes[0] is level 1) whose size is at
// most bound, and fits true. When no level is small enough it returns the level with the
// fewest bytes (the lowest of equals) and fits false: the scenario then still runs, at the
// closest this library gets to the bound, and the report says the bytes are not equal,
// rather than refusing the whole run over one scenario. sizes must hold one positive size per
// level and bound must be positive: anything else is a probe that went wrong.
func chooseGzipLevel(sizes []int, bound int) (level int, fits bool, err error) {
	if len(sizes) != maxGzipLevel {
		return 0, false, fmt.Errorf("choosing a gzip level: %d sizes, want one per level 1..%d", len(sizes), maxGzipLevel)
	}
	if bound <= 0 {
		return 0, false, fmt.Errorf("choosing a gzip level: bound %d bytes, want a positive size", bound)
	}
	for i, n := range sizes {
		if n <= 0 {
			return 0, false, fmt.Errorf("choosing a gzip level: level %d has %d bytes, want a positive size", i+1, n)
		}
	}
	for i, n := range sizes {
		if n <= bound {
			return i + 1, true, nil
		}
	}
	return slices.Index(sizes, slices.Min(sizes)) + 1, false, nil
}

// GzipLevelChoice is one server's level in gzip-equal-bytes and the probe behind it.
type GzipLevelChoice struct {
	Target string `json:"target"`
	// Level is the gzip_comp_level the scenario loaded this server at; Bytes its response
	// body there.
	Level int `json:"level"`
	Bytes int `json:"bytes"`
	// Bound is the baseline's body at referenceGzipLevel; Fits is false when no level of
	// this server came within it (Level is then its smallest output's).
	Bound int  `json:"bound"`
	Fits  bool `json:"fits"`
	// Sizes are the body bytes at levels 1..9.
	Sizes []int `json:"sizes"`
}

// gzipSizes fetches the JSON once at every level from a server running the benchmark's
// template, checks each body decodes to the document, and returns the bodies' sizes: nine
// requests on one keep-alive connection, on loopback.
func gzipSizes(c Config) ([]int, error) {
	tr := &http.Transport{DisableCompression: true} // see the bytes nginx sends
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 20 * time.Second}
	var sizes []int
	for _, level := range c.GzipLevels() {
		url := fmt.Sprintf("http://127.0.0.1:%d/%s", c.HTTPPort, gzipLevelPath(level))
		n, err := gzipSize(client, url)
		if err != nil {
			return nil, fmt.Errorf("gzip level probe: GET %s: %w", url, err)
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}

func gzipSize(client *http.Client, url string) (int, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("status %s (the config has no location for this level?)", resp.Status)
	}
	if ce := resp.Header.Get("Content-Encoding"); ce != "gzip" {
		return 0, fmt.Errorf("Content-Encoding %q, want gzip", ce)
	}
	plain, err := toolbox.Decode("gzip", body)
	if err != nil {
		return 0, fmt.Errorf("the body is not gzip: %w", err)
	}
	if !bytes.Equal(plain, jsonDocBytes()) {
		return 0, fmt.Errorf("the body decodes to %d bytes that are not the %d-byte JSON document", len(plain), len(jsonDocBytes()))
	}
	return len(body), nil
}

// OutOfBoxScenarios are those of scenarios an out-of-box run can measure: all but the
// EqualBytes ones, which need the benchmark's template (its /gzN/ locations).
func OutOfBoxScenarios(scenarios []Scenario) []Scenario {
	var out []Scenario
	for _, s := range scenarios {
		if !s.EqualBytes {
			out = append(out, s)
		}
	}
	return out
}

// likeForLikeOnly drops the EqualBytes scenarios when a target runs its own config (out of
// the box: its locations are its users', not the benchmark's /gzN/), and says which it
// dropped; a run left with no scenario is an error that names the fix.
func likeForLikeOnly(targets []Target, scenarios []Scenario) (kept []Scenario, dropped []string, err error) {
	oob := false
	for _, t := range targets {
		oob = oob || t.Profile != nil
	}
	if !oob {
		return scenarios, nil, nil
	}
	kept = OutOfBoxScenarios(scenarios)
	for _, s := range scenarios {
		if s.EqualBytes {
			dropped = append(dropped, s.Name)
		}
	}
	if len(kept) == 0 {
		return nil, dropped, fmt.Errorf("bench: scenario %s is measured like for like only (each server at its own level of the benchmark's config); out of the box there is nothing to run: use --mode like-for-like or both, or add another scenario", strings.Join(dropped, ", "))
	}
	return kept, dropped, nil
}

// chooseGzipLevels runs before the warm-up when a scenario is EqualBytes: it probes every
// server's response size at every level, chooses each server's level against the
// baseline's at referenceGzipLevel, points the servers' configs at it, and checks and
// records each EqualBytes scenario as served at the chosen level.
func (r *session) chooseGzipLevels() error {
	if !slices.ContainsFunc(r.opts.Scenarios, func(s Scenario) bool { return s.EqualBytes }) {
		return nil
	}
	sizes := make([][]int, len(r.servers))
	for i, s := range r.servers {
		var err error
		if sizes[i], err = gzipSizes(s.Config); err != nil {
			return fmt.Errorf("target %s: %w", s.Name, err)
		}
	}
	bound := sizes[r.baseline][referenceGzipLevel-1]
	r.gzipLevels = nil
	for i, s := range r.servers {
		level, fits, err := chooseGzipLevel(sizes[i], bound)
		if err != nil {
			return fmt.Errorf("target %s: %w", s.Name, err)
		}
		s.Config.EqualBytesLevel = level
		ch := GzipLevelChoice{Target: s.Name, Level: level, Bytes: sizes[i][level-1], Bound: bound, Fits: fits, Sizes: sizes[i]}
		r.gzipLevels = append(r.gzipLevels, ch)
		r.opts.Progress.Send(progress.Detailf("gzip-equal-bytes: %s", ch))
	}
	for si, sc := range r.opts.Scenarios {
		if !sc.EqualBytes {
			continue
		}
		for ti, s := range r.servers {
			if err := sc.Check(s.Config); err != nil {
				return fmt.Errorf("target %s: %w", s.Name, err)
			}
			enc, size, err := checkAsServed(sc, s.Config)
			if err != nil {
				return fmt.Errorf("target %s: %w", s.Name, err)
			}
			r.served[[2]int{si, ti}] = servedAs{enc, size}
		}
	}
	return nil
}

// String says the choice in one line: "built level 2, 24408 bytes (baseline's level 1:
// 26409)".
func (g GzipLevelChoice) String() string {
	s := fmt.Sprintf("%s level %d, %d bytes (baseline's level %d: %d)", g.Target, g.Level, g.Bytes, referenceGzipLevel, g.Bound)
	if !g.Fits {
		s += "; no level is that small: its fewest bytes, not equal bytes"
	}
	return s
}
