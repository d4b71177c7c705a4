package smoke

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"sort"
)

// The geoip2 module's check needs a MaxMind DB to look addresses up in, and a real one is
// the user's to mount (a GeoLite2 download, under MaxMind's licence terms). The suite writes
// its own instead: the MaxMind DB format (maxmind.github.io/MaxMind-DB, version 2.0) is a
// binary search tree over the address bits, a data section of typed values and a metadata
// map, and an IPv4 database with one network in it takes a few dozen lines. libmaxminddb
// (the module's reader) then parses a file this program made, so the check proves the
// module and its library read a database, not that a fixture matches itself.

// mmdbCountry is one network of a test database and the country ISO code it maps to, as
// GeoIP2-Country databases store it ({"country": {"iso_code": CODE}}).
type mmdbCountry struct {
	prefix netip.Prefix
	code   string
}

// writeMMDB is an IPv4 MaxMind DB (record size 24) of the networks given, of database type
// "nginx-forge-smoke".
func writeMMDB(networks []mmdbCountry) ([]byte, error) {
	// The tree: node i at depth i of each network's path (one network per path here, so
	// a path's nodes are its own); a record is a node number, nodeCount for "no data", or
	// nodeCount+16+offset for the data at offset in the data section.
	type node struct{ rec [2]uint32 }
	var nodes []node
	var data bytes.Buffer
	sort.Slice(networks, func(i, j int) bool { return networks[i].prefix.Addr().Less(networks[j].prefix.Addr()) })
	type pending struct {
		node, side int
		offset     uint32
	}
	var leaves []pending
	nodes = append(nodes, node{rec: [2]uint32{^uint32(0), ^uint32(0)}})
	for _, n := range networks {
		if !n.prefix.Addr().Is4() || n.prefix.Bits() < 1 {
			return nil, fmt.Errorf("mmdb: %s is not an IPv4 network of at least one bit", n.prefix)
		}
		addr := n.prefix.Masked().Addr().As4()
		bit := func(i int) int { return int(addr[i/8]>>(7-i%8)) & 1 }
		cur := 0
		for depth := 0; depth < n.prefix.Bits()-1; depth++ {
			b := bit(depth)
			next := nodes[cur].rec[b]
			if next == ^uint32(0) {
				nodes = append(nodes, node{rec: [2]uint32{^uint32(0), ^uint32(0)}})
				next = uint32(len(nodes) - 1)
				nodes[cur].rec[b] = next
			}
			cur = int(next)
		}
		off := uint32(data.Len())
		mmdbMap(&data, 1)
		mmdbString(&data, "country")
		mmdbMap(&data, 1)
		mmdbString(&data, "iso_code")
		mmdbString(&data, n.code)
		leaves = append(leaves, pending{cur, bit(n.prefix.Bits() - 1), off})
	}
	count := uint32(len(nodes))
	for _, l := range leaves {
		nodes[l.node].rec[l.side] = count + 16 + l.offset
	}
	var out bytes.Buffer
	for _, n := range nodes {
		for _, r := range n.rec {
			if r == ^uint32(0) {
				r = count // no data
			}
			if r >= 1<<24 {
				return nil, fmt.Errorf("mmdb: record %d does not fit in 24 bits", r)
			}
			out.Write([]byte{byte(r >> 16), byte(r >> 8), byte(r)})
		}
	}
	out.Write(make([]byte, 16)) // the data section separator
	out.Write(data.Bytes())
	mmdbMetadata(&out, count)
	return out.Bytes(), nil
}

// mmdbMetadata writes the metadata section: its marker and the map libmaxminddb requires.
func mmdbMetadata(b *bytes.Buffer, nodeCount uint32) {
	b.WriteString("\xab\xcd\xefMaxMind.com")
	mmdbMap(b, 9)
	mmdbString(b, "binary_format_major_version")
	mmdbUint(b, 5, 2)
	mmdbString(b, "binary_format_minor_version")
	mmdbUint(b, 5, 0)
	mmdbString(b, "build_epoch")
	mmdbUint(b, 9, mmdbBuildEpoch)
	mmdbString(b, "database_type")
	mmdbString(b, "nginx-forge-smoke")
	mmdbString(b, "description")
	mmdbMap(b, 1)
	mmdbString(b, "en")
	mmdbString(b, "the nginx-forge smoke suite's test database")
	mmdbString(b, "ip_version")
	mmdbUint(b, 5, 4)
	mmdbString(b, "languages")
	mmdbControl(b, 11, 0) // an empty array
	mmdbString(b, "node_count")
	mmdbUint(b, 6, uint64(nodeCount))
	mmdbString(b, "record_size")
	mmdbUint(b, 5, 24)
}

// mmdbBuildEpoch is the database's build time (2026-01-01T00:00:00Z): libmaxminddb refuses
// a database without one, and a fixed one keeps the file the same on every run.
const mmdbBuildEpoch = 1767225600

// mmdbControl writes the control byte of a value of type typ and size n (n < 285): a type
// above 7 is "extended" (type 0, then a byte of typ-7), and a size from 29 on is 29 in the
// control byte and n-29 in the next byte.
func mmdbControl(b *bytes.Buffer, typ, n int) {
	small := min(n, 29)
	if typ <= 7 {
		b.WriteByte(byte(typ<<5 | small))
	} else {
		b.WriteByte(byte(small))
		b.WriteByte(byte(typ - 7))
	}
	if n >= 29 {
		b.WriteByte(byte(n - 29))
	}
}

func mmdbString(b *bytes.Buffer, s string) {
	mmdbControl(b, 2, len(s))
	b.WriteString(s)
}

func mmdbMap(b *bytes.Buffer, entries int) { mmdbControl(b, 7, entries) }

// mmdbUint writes an unsigned integer of type typ (5 uint16, 6 uint32, 9 uint64) in its
// fewest big-endian bytes.
func mmdbUint(b *bytes.Buffer, typ int, v uint64) {
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], v)
	i := 0
	for i < 8 && buf[i] == 0 {
		i++
	}
	mmdbControl(b, typ, 8-i)
	b.Write(buf[i:])
}
