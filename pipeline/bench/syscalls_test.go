package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testdata/strace-c.txt is strace 6.1's -c -f summary of a Debian nginx 1.22 worker (Debian's
// default settings: sendfile, tcp_nopush, an access log file, no open_file_cache) over 500
// requests of a 16 KiB page that curl made one after another on one keep-alive connection.
func TestParseStraceSummaryFixture(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "strace-c.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	calls, total, errs, err := parseStraceSummary(f)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	byName := map[string]SyscallStat{}
	for i, c := range calls {
		sum += c.Calls
		byName[c.Name] = c
		if i > 0 && calls[i-1].Calls < c.Calls {
			t.Errorf("not sorted by count: %s %d before %s %d", calls[i-1].Name, calls[i-1].Calls, c.Name, c.Calls)
		}
	}
	if sum != total || total != 5006 || errs != 0 || len(calls) != 11 {
		t.Errorf("total %d (rows add up to %d), errors %d, %d rows", total, sum, errs, len(calls))
	}
	// Ten calls a request: without open_file_cache every request opens, stats and closes the
	// file; tcp_nopush sets and clears TCP_CORK around sendfile; the access log writes a line.
	for name, want := range map[string]int64{"setsockopt": 1000, "openat": 500, "newfstatat": 500, "close": 501,
		"sendfile": 500, "writev": 500, "write": 500, "recvfrom": 501, "epoll_wait": 502, "accept4": 1} {
		if c := byName[name]; c.Calls != want {
			t.Errorf("%s: %d calls, want %d", name, c.Calls, want)
		}
	}
	if calls[0].Name != "setsockopt" {
		t.Errorf("most frequent %s, want setsockopt", calls[0].Name)
	}
}

func TestParseStraceSummaryRejects(t *testing.T) {
	head := "% time     seconds  usecs/call     calls    errors syscall\n------ ----------- ----------- --------- --------- ----------------\n"
	row := " 60.00    0.000060           6        10           writev\n 40.00    0.000040           4        10         5 recvfrom\n"
	sep := "------ ----------- ----------- --------- --------- ----------------\n"
	for name, tc := range map[string]struct{ in, want string }{
		"no total":   {head + row, "no total row"},
		"wrong sum":  {head + row + sep + "100.00    0.000100           5        21         5 total\n", "add up to 20"},
		"bad calls":  {head + " 60.00    0.000060           6        x           writev\n" + sep + "100.00 0.1 5 10 total\n", "calls"},
		"two totals": {head + row + sep + "100.00    0.000100           5        20         5 total\n100.00    0.000100           5        20         5 total\n", "two total rows"},
	} {
		if _, _, _, err := parseStraceSummary(strings.NewReader(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want it to mention %q", name, err, tc.want)
		}
	}
	calls, total, errs, err := parseStraceSummary(strings.NewReader(head + row + sep + "100.00    0.000100           5        20         5 total\n"))
	if err != nil || total != 20 || errs != 5 || len(calls) != 2 || calls[0].Name != "recvfrom" || calls[1].Errors != 0 {
		t.Errorf("ParseStraceSummary = %+v, %d, %d, %v", calls, total, errs, err)
	}
}
