package toolbox

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestTail(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"  short\n", 10, "short"},
		{"0123456789", 10, "0123456789"},
		{"0123456789\n", 4, "...6789"},
		{"", 3, ""},
	} {
		if got := Tail(c.s, c.n); got != c.want {
			t.Errorf("Tail(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

func TestTailLines(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"a\nb\nc\n\n", 2, "b\nc"},
		{"a\nb", 5, "a\nb"},
		{"", 2, ""},
	} {
		if got := TailLines(c.s, c.n); got != c.want {
			t.Errorf("TailLines(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

func TestFileTail(t *testing.T) {
	p := filepath.Join(t.TempDir(), "log")
	var sb strings.Builder
	for i := range 1000 {
		sb.WriteString("line " + strconv.Itoa(i) + "\n")
	}
	if err := os.WriteFile(p, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := FileTail(p, 3); got != "line 997\nline 998\nline 999" {
		t.Errorf("FileTail = %q", got)
	}
	if got := FileTail(p+".missing", 3); got != "" {
		t.Errorf("FileTail of a missing file = %q, want empty", got)
	}
}

// The ports are distinct and bindable on loopback.
func TestFreePorts(t *testing.T) {
	ports, err := FreePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] || p <= 0 {
			t.Fatalf("ports %v repeat or are invalid", ports)
		}
		seen[p] = true
	}
	p, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
	if err != nil {
		t.Fatalf("FreePort gave %d, which cannot be bound: %v", p, err)
	}
	l.Close()
}

func TestProc(t *testing.T) {
	self, err := ProcStatus(Self)
	if err != nil {
		t.Fatal(err)
	}
	byPid, err := ProcStatus(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []string{self, byPid} {
		if v, ok := StatusField(st, "Pid"); !ok || v != strconv.Itoa(os.Getpid()) {
			t.Errorf("Pid field %q %v, want %d", v, ok, os.Getpid())
		}
	}
	if _, ok := StatusField(self, "NoSuchField"); ok {
		t.Error("StatusField found a field that does not exist")
	}
	mi, err := MountInfo(Self)
	if err != nil || !strings.Contains(mi, " / ") {
		t.Errorf("MountInfo(Self): %v, %q", err, Tail(mi, 200))
	}
	if _, err := ProcStatus(1 << 30); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("status of a process that does not exist: %v, want ErrNotExist", err)
	}
}

// A held lock keeps a second holder out: a cancellable wait ends with the context, a
// blocking one returns once the lock is released.
func TestLock(t *testing.T) {
	p := filepath.Join(t.TempDir(), "lock")
	unlock, err := Lock(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := Lock(ctx, p); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), p) {
		t.Fatalf("second Lock while held: %v, want a deadline error naming %s", err, p)
	}
	got := make(chan func(), 1)
	go func() {
		u, err := Lock(context.Background(), p)
		if err != nil {
			t.Error(err)
		}
		got <- u
	}()
	select {
	case <-got:
		t.Fatal("a blocking Lock returned while the lock was held")
	case <-time.After(200 * time.Millisecond):
	}
	unlock()
	select {
	case u := <-got:
		u()
	case <-time.After(5 * time.Second):
		t.Fatal("a blocking Lock did not return after the release")
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	u, err := Lock(ctx2, p)
	if err != nil {
		t.Fatalf("Lock after every release: %v", err)
	}
	u()
}

// TestDecode: a gzip body decodes to what was compressed; a body that is not gzip, and an
// encoding Decode does not know, are errors (br and zstd are checked by smoke's encoding tests).
func TestDecode(t *testing.T) {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte("hello, nginx"))
	zw.Close()
	if got, err := Decode("gzip", b.Bytes()); err != nil || string(got) != "hello, nginx" {
		t.Errorf("Decode(gzip) = %q, %v", got, err)
	}
	if _, err := Decode("gzip", []byte("plain")); err == nil {
		t.Error("Decode(gzip) of a plain body: no error")
	}
	if _, err := Decode("deflate", b.Bytes()); err == nil || !strings.Contains(err.Error(), `"deflate"`) {
		t.Errorf("Decode(deflate) = %v, want an error naming it", err)
	}
}
