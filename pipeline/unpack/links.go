package unpack

import (
	"errors"
	"strings"
)

// maxLinkFollows is how many symbolic links one resolution may follow: Linux's limit (40),
// past which a stage's read fails with ELOOP.
const maxLinkFollows = 40

// position is where a walk through the tree ends: the directory n, then virtual more
// segments that do not exist in the tree (a missing name, or a name below a file), which
// ".." takes back first. follows counts the symbolic links followed to get there.
type position struct {
	n       *node
	virtual int
	follows int
}

var errLoop = errors.New("too many levels of symbolic links")

// checkLinks resolves every symbolic link through the tree's own links: each must end inside
// the tree. Links to missing files are allowed (git trees hold them); loops are not. A link's
// end is found once and reused by the links through it, so the work is the bytes of the
// targets, however the links chain.
func (x *extraction) checkLinks() error {
	for _, l := range x.links {
		if _, err := x.linkEnd(l); err != nil {
			return x.refuse(shorten(x.top+"/"+l.path()), "symbolic link to %q: %v", shorten(l.target), err)
		}
	}
	return nil
}

// linkEnd is where the link l leads.
func (x *extraction) linkEnd(l *node) (position, error) {
	if l.resolved != nil {
		return *l.resolved, nil
	}
	if l.resolving {
		return position{}, errLoop
	}
	if err := x.ctx.Err(); err != nil {
		return position{}, err
	}
	l.resolving = true
	p, err := x.walk(l.parent, l.target)
	l.resolving = false
	if err != nil {
		return position{}, err
	}
	l.resolved = &p
	return p, nil
}

// walk follows target (relative, possibly with ".." segments) from the directory at through
// the tree's links, and returns where it ends.
func (x *extraction) walk(at *node, target string) (position, error) {
	p := position{n: at}
	for seg := range strings.SplitSeq(target, "/") {
		switch {
		case seg == "" || seg == ".":
			continue
		case seg == "..":
			switch {
			case p.virtual > 0:
				p.virtual--
			case p.n == x.root:
				return position{}, errors.New("it leads out of the tree")
			default:
				p.n = p.n.parent
			}
			continue
		case p.virtual > 0:
			p.virtual++
			continue
		}
		k := p.n.kids[seg]
		switch {
		case k == nil || k.kind == kindFile:
			p.virtual = 1
		case k.kind == kindDir:
			p.n = k
		default:
			end, err := x.linkEnd(k)
			if err != nil {
				return position{}, err
			}
			p.follows += 1 + end.follows
			if p.follows > maxLinkFollows {
				return position{}, errLoop
			}
			p.n, p.virtual = end.n, end.virtual
		}
	}
	return p, nil
}
