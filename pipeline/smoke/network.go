package smoke

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Network is the Target of a server at Host that only the network reaches: a Dagger
// service seen from a container bound to it, or any nginx-forge container whose ports are
// reachable. Only the network checks run; the others are skipped as unobservable (see
// Combine), never passed.
type Network struct {
	// Host is a name or an address: the service's alias, "127.0.0.1".
	Host string
}

func (n Network) unsupported(what string) error {
	return fmt.Errorf("%w: only the network of the server at %s is reachable from here, not its %s", errors.ErrUnsupported, n.Host, what)
}

// Exec is unsupported: the server runs elsewhere.
func (n Network) Exec(context.Context, ...string) ([]byte, []byte, int, error) {
	return nil, nil, -1, n.unsupported("processes (no exec)")
}

// Addr is Host with the port.
func (n Network) Addr(network string, port int) string {
	return net.JoinHostPort(n.Host, strconv.Itoa(port))
}

// DialContext dials from here.
func (n Network) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, address)
}

// ListenPacket opens a UDP socket on the unspecified address of the family of address: the
// suite asks for loopback, which could not send to a server on another host.
func (n Network) ListenPacket(ctx context.Context, network, address string) (net.PacketConn, error) {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	any := "0.0.0.0"
	if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
		any = "::"
	}
	var lc net.ListenConfig
	return lc.ListenPacket(ctx, network, net.JoinHostPort(any, "0"))
}

// RootFS is "": the image's files are not here.
func (n Network) RootFS() string { return "" }

// ProcStatus is unsupported.
func (n Network) ProcStatus(context.Context) ([]string, error) {
	return nil, n.unsupported("processes")
}

// MountInfo is unsupported.
func (n Network) MountInfo(context.Context) (string, error) {
	return "", n.unsupported("mounts")
}

// Logs is unsupported.
func (n Network) Logs() ([]byte, error) { return nil, n.unsupported("output") }

// Exited is false: a server elsewhere is judged by whether it answers.
func (n Network) Exited() (bool, string) { return false, "" }

// TrustTLS is the TLS material of a client that holds only the server's certificate (PEM,
// self-signed as NewTLS makes it), asking for serverName: what the TLS checks need to
// verify a server whose key is elsewhere.
func TrustTLS(certPEM []byte, serverName string) (*TLS, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate found")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing the certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &TLS{CertPEM: certPEM, Cert: cert, Pool: pool, ServerName: serverName}, nil
}

// TLSCertFile is the certificate's name in the directory WriteDir writes (mounted at the
// runtime contract's TLSDir): a client in a container with that mount trusts it.
const TLSCertFile = "tls.crt"

// LoopbackHost is where a client reaches a server it started itself.
const LoopbackHost = "127.0.0.1"

// The in-engine client's flags (cmd/smokeclient, ClientMain), named here so that the engine
// that builds its argv (ClientRequest.Args) and the client that parses it (ClientMain)
// cannot drift apart; `ci smoke --address` declares its flags with the same names.
const (
	FlagAddress       = "address"
	FlagTLSCA         = "tls-ca"
	FlagServerName    = "tls-server-name"
	FlagExpectModules = "expect-modules"
	FlagUID           = "uid"
	FlagHTTPPort      = "http-port"
	FlagHTTPSPort     = "https-port"
	FlagStart         = "start"
	FlagWatchRoot     = "watch-root"
	FlagJSON          = "json"
	FlagEmulated      = "emulated"
	flagArgsSentinel  = "--"
)

// ClientRequest is one run of the client: the suite against a server at Address, printed
// as JSON (Report.WriteJSON).
type ClientRequest struct {
	// Address is the server's host (a service alias, LoopbackHost).
	Address string
	// TLSCA is the path of the server's certificate for the client; "" skips TLS checks.
	TLSCA string
	// ExpectModules are Expect.Modules, the configure flags the image was built with: the
	// HTTP/3, brotli and zstd checks need to know what to expect. nil: the default set.
	ExpectModules []string
	// UID is the user nginx must run as (0: the default).
	UID int
	// HTTPPort and HTTPSPort (0: the defaults).
	HTTPPort, HTTPSPort int
	// Start, when set, is the command the client starts and observes itself (the image's
	// entrypoint): its processes, its output, and writes to WatchRoot while it runs.
	Start []string
	// WatchRoot is the directory whose files must not change while Start runs ("/").
	WatchRoot string
	// Emulated says the server runs under qemu-user (Options.Emulated): the client scales
	// its timeouts and tolerates the emulator's missing Linux AIO as the host's run does.
	Emulated bool
}

// Args is the argv after the program name: `--address HOST ... --json [--start -- START...]`.
func (c ClientRequest) Args() []string {
	flag := func(name string) string { return flagArgsSentinel + name }
	args := []string{flag(FlagAddress), c.Address}
	if c.TLSCA != "" {
		args = append(args, flag(FlagTLSCA), c.TLSCA)
	}
	if c.ExpectModules != nil {
		// = keeps a value that starts with "--" a value.
		args = append(args, flag(FlagExpectModules)+"="+strings.Join(c.ExpectModules, ","))
	}
	if c.UID != 0 {
		args = append(args, flag(FlagUID), strconv.Itoa(c.UID))
	}
	if c.HTTPPort != 0 {
		args = append(args, flag(FlagHTTPPort), strconv.Itoa(c.HTTPPort))
	}
	if c.HTTPSPort != 0 {
		args = append(args, flag(FlagHTTPSPort), strconv.Itoa(c.HTTPSPort))
	}
	if c.Emulated {
		args = append(args, flag(FlagEmulated))
	}
	args = append(args, flag(FlagJSON))
	if len(c.Start) > 0 {
		if c.WatchRoot != "" {
			args = append(args, flag(FlagWatchRoot), c.WatchRoot)
		}
		args = append(args, flag(FlagStart), flagArgsSentinel)
		args = append(args, c.Start...)
	}
	return args
}
