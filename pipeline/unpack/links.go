package unpack

import (
	"errors"
	"path"
	"sort"
	"strings"
)

// checkLinks resolves every symbolic link through the tree's own links: each must end inside
// the tree. Links to missing files are allowed (git trees hold them); loops are not.
func (x *extraction) checkLinks() error {
	names := make([]string, 0, len(x.links))
	for l := range x.links {
		names = append(names, l)
	}
	sort.Strings(names)
	for _, l := range names {
		if _, err := x.resolve(joinUnclean(path.Dir(l), x.links[l]), 0); err != nil {
			return x.refuse(x.top+"/"+l, "symbolic link to %q: %v", x.links[l], err)
		}
	}
	return nil
}

// resolve walks p (relative to the top directory, possibly with ".." segments) through the
// tree's links and returns where it ends.
func (x *extraction) resolve(p string, depth int) (string, error) {
	if depth > 40 {
		return "", errors.New("too many levels of symbolic links")
	}
	var at []string
	for _, seg := range strings.Split(p, "/") {
		switch seg {
		case "", ".":
			continue
		case "..":
			if len(at) == 0 {
				return "", errors.New("it leads out of the tree")
			}
			at = at[:len(at)-1]
			continue
		}
		at = append(at, seg)
		cur := strings.Join(at, "/")
		if target, ok := x.links[cur]; ok {
			end, err := x.resolve(joinUnclean(path.Dir(cur), target), depth+1)
			if err != nil {
				return "", err
			}
			at = strings.Split(end, "/")
			if end == "" {
				at = nil
			}
		}
	}
	return strings.Join(at, "/"), nil
}

// joinUnclean joins a link's directory and its target without cleaning: path.Join would
// resolve "link/.." lexically, which is not where a link's ".." goes.
func joinUnclean(dir, target string) string {
	if dir == "." || dir == "" {
		return target
	}
	return dir + "/" + target
}
