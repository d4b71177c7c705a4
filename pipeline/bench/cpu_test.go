package bench

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as the CPU burner: with burnEnv set it runs burnMain instead of
// the tests (see TestMain).
const burnEnv = "NGINX_FORGE_BENCH_BURN"

func TestMain(m *testing.M) {
	if spec := os.Getenv(burnEnv); spec != "" {
		burnMain(spec)
		return
	}
	os.Exit(m.Run())
}

// selfCPU is this process's own user+system CPU time (getrusage, nanosecond-exact accounting).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// burnUntil spins until this process has used total CPU time in all.
func burnUntil(total time.Duration) {
	x := 0
	for selfCPU() < total {
		for i := range 100000 {
			x += i
		}
	}
	_ = x
}

// burnKernelUntil spends CPU in the kernel until this process has used total system time:
// reading /dev/zero into a large buffer is almost all kernel work (clearing and copying pages).
func burnKernelUntil(total time.Duration) {
	f, err := os.Open("/dev/zero")
	if err != nil {
		os.Exit(6)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		if time.Duration(ru.Stime.Nano()) >= total {
			return
		}
		for range 16 {
			_, _ = f.Read(buf)
		}
	}
}

// burnMain implements the helper roles:
//
//	"kernel:MS"     burn MS ms of system time (burnKernelUntil), print "done", sleep until
//	                stdin closes
//	"leaf:MS:stay"  burn until the process used MS ms of CPU, then sleep until stdin closes
//	"leaf:MS:exit"  burn until MS ms, then exit
//	"tree"          wait for "go" on stdin, start a staying leaf of 300 ms and an exiting leaf of
//	                200 ms (waited for, so its time moves to this process's child times), burn
//	                400 ms beyond what it had used, print "done", sleep until stdin closes
func burnMain(spec string) {
	var ms int
	var mode string
	if n, _ := fmt.Sscanf(spec, "kernel:%d", &ms); n == 1 {
		burnKernelUntil(time.Duration(ms) * time.Millisecond)
		fmt.Println("done")
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		return
	}
	if n, _ := fmt.Sscanf(spec, "leaf:%d:%s", &ms, &mode); n == 2 {
		burnUntil(time.Duration(ms) * time.Millisecond)
		if mode == "stay" {
			_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		}
		return
	}
	in := bufio.NewReader(os.Stdin)
	fmt.Println("ready")
	if line, _ := in.ReadString('\n'); line != "go\n" {
		os.Exit(3)
	}
	stay := exec.Command(os.Args[0])
	stay.Env = append(os.Environ(), burnEnv+"=leaf:300:stay")
	stayIn, _ := stay.StdinPipe()
	exit := exec.Command(os.Args[0])
	exit.Env = append(os.Environ(), burnEnv+"=leaf:200:exit")
	if err := stay.Start(); err != nil {
		os.Exit(4)
	}
	if err := exit.Run(); err != nil {
		os.Exit(5)
	}
	burnUntil(selfCPU() + 400*time.Millisecond)
	// The staying leaf must have finished burning before "done".
	for {
		st, err := readProcStat(stay.Process.Pid)
		if err == nil && st.User+st.System >= 290*time.Millisecond {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Println("done")
	_, _ = in.ReadString('\n')
	stayIn.Close()
	_ = stay.Wait()
}

// TestTreeCPU measures real processes burning known amounts of CPU: the process, a live
// child, and a child that exited and was reaped must all be counted, and nothing else.
func TestTreeCPU(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), burnEnv+"=tree")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); _ = cmd.Wait() }()
	out := bufio.NewReader(stdout)
	if line, err := out.ReadString('\n'); line != "ready\n" {
		t.Fatalf("helper said %q, %v", line, err)
	}

	// Idle: a process waiting on a pipe uses no CPU.
	idle0, err := treeCPU(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	before, err := treeCPU(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if d := before.Sub(idle0).Total(); d > 20*time.Millisecond {
		t.Errorf("an idle process used %v of CPU in 300ms", d)
	}

	start := time.Now()
	fmt.Fprintln(stdin, "go")
	if line, err := out.ReadString('\n'); line != "done\n" {
		t.Fatalf("helper said %q, %v", line, err)
	}
	after, err := treeCPU(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	got := after.Sub(before).Total()
	// 400 + 300 + 200 ms burnt; each process's /proc figures are truncated to whole ticks
	// (10 ms) for user and system, and starting two Go programs costs a little.
	const want = 900 * time.Millisecond
	t.Logf("measured %v of CPU for %v burnt, in %v of wall time", got, want, time.Since(start))
	if got < want-6*clockTick() || got > want+150*time.Millisecond {
		t.Errorf("TreeCPU delta = %v, want about %v", got, want)
	}
}

// TestTreeCPUSplitsUserAndSystem runs one process that burns CPU in its own code and one
// that burns it in the kernel: treeCPU must put each where it was spent (the bench's "in the
// kernel" column), within a tolerance for the other side's small overhead (the burners'
// getrusage calls, the Go runtime).
func TestTreeCPUSplitsUserAndSystem(t *testing.T) {
	for _, tc := range []struct {
		spec       string
		wantKernel bool
	}{{"leaf:300:stay", false}, {"kernel:300", true}} {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), burnEnv+"="+tc.spec)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The user burner prints nothing: wait until it has burnt its 300 ms.
		var got cpuTimes
		for range 3000 {
			if got, err = treeCPU(cmd.Process.Pid); err != nil {
				t.Fatal(err)
			}
			if got.Total() >= 290*time.Millisecond {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		stdin.Close()
		_ = cmd.Wait()
		share := float64(got.System) / float64(got.Total())
		t.Logf("%s: user %v, system %v (%.0f%% in the kernel)", tc.spec, got.User, got.System, 100*share)
		if got.Total() < 290*time.Millisecond {
			t.Errorf("%s: only %v of CPU seen", tc.spec, got.Total())
		}
		if tc.wantKernel && share < 0.7 {
			t.Errorf("%s: %.0f%% of its CPU in the kernel, want at least 70%%", tc.spec, 100*share)
		}
		if !tc.wantKernel && share > 0.3 {
			t.Errorf("%s: %.0f%% of its CPU in the kernel, want at most 30%%", tc.spec, 100*share)
		}
	}
}

func TestParseProcStat(t *testing.T) {
	// A command name with spaces and a ')' must not shift the fields.
	stat := "4242 (ngi) nx (x)) S 4200 4242 4242 0 -1 4194560 1 0 0 0 150 25 300 45 20 0 1 0 100 1000 100 18446744073709551615\n"
	st, err := parseProcStat(4242, []byte(stat))
	if err != nil {
		t.Fatal(err)
	}
	tick := clockTick()
	if st.PPID != 4200 || st.User != 150*tick || st.System != 25*tick || st.ChildUser != 300*tick || st.ChildSystem != 45*tick {
		t.Errorf("parseProcStat = %+v", st)
	}
	if _, err := parseProcStat(1, []byte("1 (init S 0")); err == nil {
		t.Error("parseProcStat accepted a truncated line")
	}
	if tick != 10*time.Millisecond {
		t.Logf("USER_HZ here is %d", time.Second/tick)
	}
}

func TestTreeCPUOfMissingProcess(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := treeCPU(cmd.Process.Pid); err == nil {
		t.Error("TreeCPU of a reaped process succeeded")
	} else if want := strconv.Itoa(cmd.Process.Pid); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name pid %s", err, want)
	}
}
