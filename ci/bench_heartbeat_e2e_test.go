//go:build integration

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// fakeWrkOutput is what Debian's wrk 4.1.0 prints with --latency (pipeline/bench's parser
// reads it): the stand-in wrk below prints it instead of measuring anything.
const fakeWrkOutput = `Running 1s test @ http://127.0.0.1:8080/
  1 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   876.54us  210.32us  12.01ms   93.12%
    Req/Sec    71.23k     3.45k   75.10k    80.00%
  Latency Distribution
     50%  812.00us
     75%    0.93ms
     90%    1.07ms
     99%    1.63ms
  213690 requests in 1.00s, 245.20MB read
Requests/sec:  71229.87
Transfer/sec:     81.73MB
`

// Issue 40: a bench round runs for minutes (every scenario on every server) and printed
// nothing without -v. Each warm-up, round and syscall pass is now a step, and the renderer's
// heartbeat names the one running every 15 s; -q keeps it quiet. The servers are real
// (Debian's nginx, idle); wrk is a stand-in that waits for the test, then prints a recorded
// run: nothing is measured, and the clock and the ticker are the test's.
func TestBenchHeartbeatNamesTheRound(t *testing.T) {
	notInActions(t)
	nginx := testenv.Tool(t, "nginx", "nginx")
	for _, quiet := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "-q"}[quiet], func(t *testing.T) {
			t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			tick := make(chan time.Time)
			oldNow, oldTick := logNow, heartbeatTick
			logNow = func() time.Time { return t0 }
			heartbeatTick = func() (<-chan time.Time, func()) { return tick, func() {} }
			t.Cleanup(func() { logNow, heartbeatTick = oldNow, oldTick })

			dir := t.TempDir()
			calls, release := filepath.Join(dir, "calls"), filepath.Join(dir, "release")
			out := filepath.Join(dir, "wrk.out")
			if err := os.WriteFile(out, []byte(fakeWrkOutput), 0o644); err != nil {
				t.Fatal(err)
			}
			wrk := filepath.Join(dir, "wrk")
			script := "#!/bin/sh\necho \"$@\" >> " + calls + "\nwhile [ ! -e " + release + " ]; do sleep 0.02; done\ncat " + out + "\n"
			if err := os.WriteFile(wrk, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.WriteFile(release, nil, 0o644) })

			args := []string{"bench", "--nginx", nginx, "--baseline", nginx, "--mode", "like-for-like",
				"--scenarios", "http-keepalive", "--rounds", "1", "--duration", "1s", "--warmup", "0",
				"--syscall-requests", "0", "--no-pin", "--wrk", wrk}
			if quiet {
				args = append(args, "-q")
			}
			var stdout, stderr bytes.Buffer
			done := make(chan int, 1)
			go func() { done <- run(context.Background(), args, &stdout, &stderr) }()
			deadline := time.Now().Add(60 * time.Second)
			for {
				if _, err := os.Stat(calls); err == nil {
					break // the round's first wrk run is waiting
				}
				select {
				case code := <-done:
					t.Fatalf("exit %d before the round's first wrk run:\n%s", code, stderr.String())
				case <-time.After(20 * time.Millisecond):
				}
				if time.Now().After(deadline) {
					t.Fatal("no wrk run started in 60 s")
				}
			}
			tickHeartbeat(t, tick, t0, quiet)
			if err := os.WriteFile(release, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			var code int
			select {
			case code = <-done:
			case <-time.After(60 * time.Second):
				t.Fatal("the bench did not end after wrk answered")
			}
			log := stderr.String()
			const step = "round 1/1 (like-for-like)"
			if code != 0 || !strings.Contains(log, step+": started\n") || !strings.Contains(log, step+": done in ") {
				t.Fatalf("exit %d, want 0 with the round as a step:\n%s\n%s", code, log, stdout.String())
			}
			beats := linesNaming(log, "still running: ")
			if quiet {
				if len(beats) != 0 {
					t.Errorf("-q printed the heartbeat:\n%s", log)
				}
				return
			}
			want := []string{"still running: " + step + " 15s", "still running: " + step + " 1m30s"}
			if len(beats) == 3 && beats[2] == "still running: "+step+" 1m45s" {
				beats = beats[:2]
			}
			if strings.Join(beats, "\n") != strings.Join(want, "\n") {
				t.Errorf("heartbeat lines:\n%s\nwant:\n%s\nin:\n%s", strings.Join(beats, "\n"), strings.Join(want, "\n"), log)
			}
			if strings.Index(log, step+": started") > strings.Index(log, want[0]) || strings.Index(log, want[1]) > strings.Index(log, step+": done in") {
				t.Errorf("the heartbeat is not between the round's start and end:\n%s", log)
			}
		})
	}
}
