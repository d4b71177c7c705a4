// Command debianmirror prints the Debian archive this machine's apt sources name (or
// $NGINX_FORGE_DEBIAN_MIRROR), as testenv.DebianMirror reads it, for .ci/fetch-sources: the
// script and the tests take the mirror from one place, and the repository names no host.
//
// Exit status 1, with the files read and the override named on stderr, when there is none.
package main

import (
	"fmt"
	"os"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

func main() {
	m, err := testenv.DebianMirror()
	if err != nil {
		fmt.Fprintln(os.Stderr, "debianmirror:", err)
		os.Exit(1)
	}
	fmt.Println(m)
}
