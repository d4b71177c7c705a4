package bench

import (
	"os"
	"strings"
	"testing"
)

func TestReadMemStatusSelf(t *testing.T) {
	buf := make([]byte, 32<<20) // touch 32 MiB so the peak is at least that
	for i := range buf {
		buf[i] = byte(i)
	}
	m, err := readMemStatus(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if m.PID != os.Getpid() || m.RSS <= 0 || m.PeakRSS < m.RSS || m.PeakRSS < 32<<10 || m.RssAnon < 32<<10 || m.RssAnon+m.RssFile+m.RssShmem != m.RSS {
		t.Errorf("ReadMemStatus(self) = %+v", m)
	}
	_ = buf[len(buf)-1]
}

func TestParseMemStatus(t *testing.T) {
	m, err := parseMemStatus(7, "Name:\tnginx\nVmPeak:\t  20000 kB\nVmHWM:\t    9876 kB\nVmRSS:\t    5432 kB\nRssAnon:\t    1000 kB\nRssFile:\t    4000 kB\nRssShmem:\t     432 kB\n")
	if err != nil || m.PeakRSS != 9876 || m.RSS != 5432 || m.RssAnon != 1000 || m.RssFile != 4000 || m.RssShmem != 432 {
		t.Errorf("parseMemStatus = %+v, %v", m, err)
	}
	if _, err := parseMemStatus(2, "Name:\tkthreadd\nState:\tS\n"); err == nil || !strings.Contains(err.Error(), "no VmHWM") {
		t.Errorf("kernel thread: %v", err)
	}
	if _, err := parseMemStatus(7, "VmHWM:\t 12 MB\nVmRSS:\t 1 kB\n"); err == nil {
		t.Error("accepted a unit other than kB")
	}
}
