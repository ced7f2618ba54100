//go:build !linux

package kv

import (
	"context"
	"log/slog"
	"time"
)

// boundRSS does nothing: reading the process's RSS and mappings and
// MADV_DONTNEED are Linux's.
func (d *DB) boundRSS(context.Context, int64, time.Duration, *slog.Logger) {}
