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

// burnMain implements the helper roles:
//
//	"leaf:MS:stay"  burn until the process used MS ms of CPU, then sleep until stdin closes
//	"leaf:MS:exit"  burn until MS ms, then exit
//	"tree"          wait for "go" on stdin, start a staying leaf of 300 ms and an exiting leaf of
//	                200 ms (waited for, so its time moves to this process's child times), burn
//	                400 ms beyond what it had used, print "done", sleep until stdin closes
func burnMain(spec string) {
	var ms int
	var mode string
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
	if d := before - idle0; d > 20*time.Millisecond {
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
	got := after - before
	// 400 + 300 + 200 ms burnt; each process's /proc figures are truncated to whole ticks
	// (10 ms) for user and system, and starting two Go programs costs a little.
	const want = 900 * time.Millisecond
	t.Logf("measured %v of CPU for %v burnt, in %v of wall time", got, want, time.Since(start))
	if got < want-6*clockTick() || got > want+150*time.Millisecond {
		t.Errorf("TreeCPU delta = %v, want about %v", got, want)
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
