// Package safeio is how every command treats what passes through it from outside: a file a
// person named is read only when it is a regular file (OpenInput, ReadInput), a file written
// into a checkout is never written through a symbolic link (ReplaceFile), and text that is
// printed or written has its credentials replaced (Redact, RedactURL). These rules are
// shared by the lock, the source fetcher, the update checker, signing, the benchmark and the
// commands, and belong to none of them.
package safeio
