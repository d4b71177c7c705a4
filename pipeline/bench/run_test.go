//go:build integration

package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/progress"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

func testenvTool(t *testing.T) string {
	t.Helper()
	testenv.Tool(t, "wrk", "wrk")
	testenv.Tool(t, "taskset", "util-linux")
	return testenv.Tool(t, "nginx", "nginx")
}

// TestRunDebianAgainstItself is the CI acceptance run in small: Debian's nginx as both
// servers, every scenario, two alternating rounds. It checks the report's shape and
// consistency, not speed (speed is what `ci bench` prints, not what a test asserts).
func TestRunDebianAgainstItself(t *testing.T) {
	nginx := testenvTool(t)
	testenv.Tool(t, "strace", "strace")
	k := DefaultKnobs()
	var log strings.Builder
	rep, err := Run(context.Background(), []Target{{Name: "A", Binary: nginx, Knobs: k}, {Name: "B", Binary: nginx, Knobs: k}}, 1,
		Options{Duration: time.Second, Rounds: 2, Warmup: -1, SyscallRequests: 50, Progress: progress.SinkFunc(func(e progress.Event) {
			if n, ok := e.(progress.Note); ok { // the steps (warm-up, rounds) are ci's heartbeat's
				log.WriteString(n.Text + "\n")
			}
		})})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Scenarios) != len(Scenarios) || rep.Baseline != "B" || len(rep.Targets) != 2 {
		t.Fatalf("report shape: %d scenarios, baseline %q, %d targets", len(rep.Scenarios), rep.Baseline, len(rep.Targets))
	}
	if rep.Mode != ModeLikeForLike {
		t.Errorf("mode %q", rep.Mode)
	}
	for _, ti := range rep.Targets {
		if ti.Memory == nil || len(ti.Memory.Workers) == 0 || ti.Memory.MaxWorkerPeakRSS <= 0 {
			t.Errorf("target %s: memory %+v", ti.Name, ti.Memory)
		}
	}
	for _, s := range rep.Scenarios {
		if len(s.Results) != 2 || len(s.Ratios) != 1 || s.Ratios[0].Target != "A" {
			t.Fatalf("%s: %d results, ratios %+v", s.Name, len(s.Results), s.Ratios)
		}
		// The syscall pass: one count per target, over the fixed number of requests (10 for
		// the 10 MiB file).
		want := 50
		if s.Name == "tls-large" {
			want = 20
		}
		if len(s.Syscalls) != 2 || s.Syscalls[1].Target != "B" || s.Syscalls[0].PerRequest < 2 || s.Syscalls[0].Requests != want {
			t.Errorf("%s: syscalls %+v", s.Name, s.Syscalls)
		}
		for ti, res := range s.Results {
			if len(res.Runs) != 2 {
				t.Fatalf("%s/%s: %d runs", s.Name, res.Target, len(res.Runs))
			}
			for ri, r := range res.Runs {
				// Alternation: A runs first in round 1, B first in round 2.
				if wantFirst := ri == ti; (r.Order == 1) != wantFirst {
					t.Errorf("%s/%s round %d ran in position %d", s.Name, res.Target, r.Round, r.Order)
				}
				if r.Requests <= 0 || r.RequestsSec <= 0 || r.P50 <= 0 || r.P50 > r.P99 || r.ServerCPU <= 0 || r.CPUPerRequest <= 0 {
					t.Errorf("%s/%s round %d: implausible run %+v", s.Name, res.Target, r.Round, r)
				}
			}
			if !(res.RequestsSec.Min <= res.RequestsSec.Median && res.RequestsSec.Median <= res.RequestsSec.Max) {
				t.Errorf("%s/%s: stat out of order %+v", s.Name, res.Target, res.RequestsSec)
			}
		}
		q := s.Ratios[0]
		for _, st := range []Stat{q.RequestsSec, q.P50, q.P99, q.CPUPerRequest} {
			if st.N != 2 || math.IsNaN(st.Median) || st.Median <= 0 {
				t.Errorf("%s: bad ratio %+v", s.Name, st)
			}
		}
		// The ratio is per round: it must agree with the runs it came from.
		a, b := s.Results[0].Runs, s.Results[1].Runs
		r0 := a[0].RequestsSec / b[0].RequestsSec
		r1 := a[1].RequestsSec / b[1].RequestsSec
		if math.Abs(q.RequestsSec.Min-math.Min(r0, r1)) > 1e-9 || math.Abs(q.RequestsSec.Max-math.Max(r0, r1)) > 1e-9 {
			t.Errorf("%s: ratio spread %+v, runs give %v and %v", s.Name, q.RequestsSec, r0, r1)
		}
	}

	var table, md, js bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", table.String())
	for _, s := range Scenarios {
		if !strings.Contains(table.String(), s.Name) || !strings.Contains(md.String(), "| "+s.Name+" |") {
			t.Errorf("scenario %s missing from the table or the Markdown", s.Name)
		}
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatalf("JSON does not read back: %v", err)
	}
	if back.Scenarios[0].Results[0].Runs[0].Requests != rep.Scenarios[0].Results[0].Runs[0].Requests {
		t.Error("JSON round trip lost the runs")
	}
}

// TestRunBuiltTree checks that the built nginx (the runtime contract's install tree, with
// compiled-in absolute paths under /var/cache/nginx and /run/nginx) runs under the benchmark's
// self-contained config on this host.
func TestRunBuiltTree(t *testing.T) {
	testenvTool(t)
	if !testenv.E2E() && testing.Short() {
		t.Skip("skipped in -short: needs the built tree")
	}
	tree := testenv.BuiltTree(t)
	bin := filepath.Join(tree, "usr", "sbin", "nginx")
	sc, err := SelectScenarios("tls-keepalive,gzip")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), []Target{{Name: "built", Binary: bin, Knobs: DefaultKnobs()}, {Name: "self", Binary: bin, Knobs: DefaultKnobs()}}, 1,
		Options{Duration: time.Second, Rounds: 1, Warmup: -1, Scenarios: sc})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Targets[0].Binary.Version == "" || rep.Scenarios[1].Results[0].Runs[0].Requests == 0 {
		t.Errorf("report %+v", rep.Targets[0])
	}
}
