package main

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// defaultManifestTimeout bounds `ci manifest` against a registry that accepts connections and
// never answers: joining a few per-platform images and moving a handful of tags takes
// seconds.
const defaultManifestTimeout = 5 * time.Minute

// withDeadline runs fn under one deadline for the whole command (--timeout). A failure the
// deadline caused says so, with the flag that sets it: "context deadline exceeded" alone
// does not tell a person what to change.
func withDeadline(ctx context.Context, d time.Duration, fn func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	err := fn(ctx)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("no answer within the run's %s deadline (--timeout; the registry may be down or unreachable; run again, or give a longer --timeout): %w", d, err)
	}
	return err
}
