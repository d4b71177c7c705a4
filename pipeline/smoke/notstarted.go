package smoke

import (
	"context"
	"fmt"
	"net"
)

// NotStarted is the Target of an image whose container could not be started: the static
// checks still read its files, and every runtime check fails with cause.
func NotStarted(rootfs string, cause error) Target { return notStarted{rootfs, cause} }

type notStarted struct {
	root  string
	cause error
}

func (n notStarted) err() error { return fmt.Errorf("the container did not start: %w", n.cause) }
func (n notStarted) Exec(context.Context, ...string) ([]byte, []byte, int, error) {
	return nil, nil, -1, n.err()
}
func (n notStarted) Addr(network string, port int) string {
	return net.JoinHostPort("127.0.0.1", fmt.Sprint(port))
}
func (n notStarted) DialContext(context.Context, string, string) (net.Conn, error) {
	return nil, n.err()
}
func (n notStarted) ListenPacket(context.Context, string, string) (net.PacketConn, error) {
	return nil, n.err()
}
func (n notStarted) RootFS() string                               { return n.root }
func (n notStarted) ProcStatus(context.Context) ([]string, error) { return nil, n.err() }
func (n notStarted) MountInfo(context.Context) (string, error)    { return "", n.err() }
func (n notStarted) Logs() ([]byte, error)                        { return nil, nil }
func (n notStarted) Exited() (bool, string)                       { return true, "did not start: " + n.cause.Error() }
