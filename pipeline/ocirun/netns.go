package ocirun

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// DialContext connects to address ("127.0.0.1:8080") as seen from inside the container:
// the socket is created in the container's network namespace, so its loopback is the
// container's. With WithHostNetwork it is an ordinary dial.
func (c *Container) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	var conn net.Conn
	err := c.inNetns(func() error {
		var d net.Dialer
		var err error
		conn, err = d.DialContext(ctx, network, address)
		return err
	})
	return conn, err
}

// ListenPacket opens a packet socket (for QUIC: "udp", "127.0.0.1:0") inside the
// container's network namespace.
func (c *Container) ListenPacket(ctx context.Context, network, address string) (net.PacketConn, error) {
	var pc net.PacketConn
	err := c.inNetns(func() error {
		var lc net.ListenConfig
		var err error
		pc, err = lc.ListenPacket(ctx, network, address)
		return err
	})
	return pc, err
}

// inNetns runs fn on an OS thread that has joined the container's network namespace.
// Sockets belong to the namespace they were made in, so they keep working after the
// thread returns to ours.
func (c *Container) inNetns(fn func() error) error {
	if c.opts.hostNetwork {
		return fn()
	}
	if exited, how := c.Exited(); exited {
		return fmt.Errorf("container %s %s", c.id, how)
	}
	target, err := os.Open("/proc/" + strconv.Itoa(c.pid) + "/ns/net")
	if err != nil {
		return fmt.Errorf("opening network namespace of container %s: %w", c.id, err)
	}
	defer target.Close()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("opening our network namespace: %w", err)
			return
		}
		defer self.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("joining network namespace of container %s: %w", c.id, err)
			return
		}
		ferr := fn()
		// Back to our namespace before the thread serves other goroutines. If that fails
		// the thread stays locked, and Go ends it when this goroutine returns.
		if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err == nil {
			runtime.UnlockOSThread()
		}
		errc <- ferr
	}()
	return <-errc
}

// Addr is where the container's port is reached with DialContext and ListenPacket: its
// loopback, which is the host's with WithHostNetwork.
func (c *Container) Addr(network string, port int) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}
