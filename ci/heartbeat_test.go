package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Issue 40: a long step (OpenSSL's compile, a download, a push) printed nothing for minutes.
// While a step runs, the build says so every 15 s with how long it has run; -q keeps it
// quiet. The clock and the ticker are the test's: it ticks by hand, nothing waits 15 s.
func TestBuildHeartbeatNamesTheRunningStep(t *testing.T) {
	notInActions(t)
	for _, quiet := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "-q"}[quiet], func(t *testing.T) {
			t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			tick := make(chan time.Time)
			oldNow, oldTick := logNow, heartbeatTick
			logNow = func() time.Time { return t0 }
			heartbeatTick = func() (<-chan time.Time, func()) { return tick, func() {} }
			t.Cleanup(func() { logNow, heartbeatTick = oldNow, oldTick })

			// A mirror that holds every download until the test has ticked, then has none.
			requested, release := make(chan struct{}, 32), make(chan struct{})
			mirror := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requested <- struct{}{}
				select {
				case <-release:
				case <-r.Context().Done():
				}
				http.NotFound(w, r)
			}))
			t.Cleanup(mirror.Close)
			t.Cleanup(func() {
				select {
				case <-release:
				default:
					close(release)
				}
			})

			args := []string{"build", "--engine", "host", "--no-smoke", "--tree", filepath.Join(t.TempDir(), "tree"),
				"--lock", testLockPath, "--mirror", mirror.URL, "--cache", t.TempDir()}
			if quiet {
				args = append(args, "-q")
			}
			var stderr bytes.Buffer
			done := make(chan int, 1)
			go func() { done <- run(context.Background(), args, new(bytes.Buffer), &stderr) }()
			select {
			case <-requested: // the fetch step is running
			case code := <-done:
				t.Fatalf("exit %d before any download:\n%s", code, stderr.String())
			case <-time.After(30 * time.Second):
				t.Fatal("no download was asked for in 30 s")
			}
			tickHeartbeat(t, tick, t0, quiet)
			close(release)
			var code int
			select {
			case code = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the build did not end after the mirror answered")
			}
			log := stderr.String()
			if code != 1 || !strings.Contains(log, "fetch: started\n") || !strings.Contains(log, "fetch: failed after") {
				t.Fatalf("exit %d, want 1 after the fetch step started and failed:\n%s", code, log)
			}
			beats := linesNaming(log, "still running: ")
			if quiet {
				if len(beats) != 0 {
					t.Errorf("-q printed the heartbeat:\n%s", log)
				}
				return
			}
			want := []string{"still running: fetch 15s", "still running: fetch 1m30s"}
			if len(beats) == 3 && beats[2] == "still running: fetch 1m45s" {
				beats = beats[:2]
			}
			if strings.Join(beats, "\n") != strings.Join(want, "\n") {
				t.Errorf("heartbeat lines:\n%s\nwant:\n%s\nin:\n%s", strings.Join(beats, "\n"), strings.Join(want, "\n"), log)
			}
			if strings.Index(log, "fetch: started") > strings.Index(log, want[0]) || strings.Index(log, want[1]) > strings.Index(log, "fetch: failed after") {
				t.Errorf("the heartbeat is not between the step's start and end:\n%s", log)
			}
		})
	}
}

// tickHeartbeat drives the injected heartbeat ticker while a step runs: with -q nothing may
// be listening; otherwise ticks at 15 s, 90 s and 105 s after t0. Each send returns once the
// heartbeat took the tick, and it takes the next only after printing for the one before: the
// third send makes sure of the first two lines (the third may come after the step ended, and
// say nothing).
func tickHeartbeat(t *testing.T, tick chan<- time.Time, t0 time.Time, quiet bool) {
	t.Helper()
	if quiet {
		select {
		case tick <- t0.Add(15 * time.Second):
			t.Error("with -q, the heartbeat is still listening for its ticker")
		default:
		}
		return
	}
	tick <- t0.Add(15 * time.Second)
	tick <- t0.Add(90 * time.Second)
	tick <- t0.Add(105 * time.Second)
}
