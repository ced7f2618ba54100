//go:build !linux

package kv

import (
	"context"
	"log/slog"
	"time"
)

// dropWritten does nothing: reading the process's mappings and
// MADV_DONTNEED are Linux's.
func (d *DB) dropWritten(context.Context, time.Duration, *slog.Logger) {}
