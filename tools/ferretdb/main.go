// Command erplink-ferretdb runs an embedded FerretDB (SQLite handler) that
// speaks the MongoDB wire protocol, for erplink's tests.
//
// Why this exists instead of the upstream binary:
//
//   - `go install github.com/FerretDB/FerretDB/cmd/ferretdb@v1.24.2` fails in
//     our environment: it needs the module proxy's `@v/list` endpoint for the
//     deprecation check, and that endpoint is not reachable (403).
//   - Building upstream cmd/ferretdb from a wrapper module compiles, but the
//     binary panics at startup ("Invalid build/version/version.txt"): when the
//     main module is FerretDB itself, build/version requires version.txt,
//     which is empty in the published module zip.
//
// The embeddable package github.com/FerretDB/FerretDB/ferretdb skips that
// check when the main module is not FerretDB (as here), and never starts
// telemetry. Build with scripts/ferretdb.sh install.
//
// Output contract: once the listener accepts TCP connections, exactly one line
// "ready <host:port>" is printed to stdout; logs go to stderr. SIGINT/SIGTERM
// shut the server down and the process exits 0.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/FerretDB/FerretDB/ferretdb"
)

func main() {
	listenAddr := flag.String("listen-addr", "127.0.0.1:27017", "TCP address to listen on (port 0 picks a free port)")
	sqliteDir := flag.String("sqlite-dir", "", "directory for SQLite databases (required; created if missing)")
	logLevel := flag.String("log-level", "warn", "log level: debug, info, warn, error")
	flag.Parse()

	if err := run(*listenAddr, *sqliteDir, *logLevel); err != nil {
		fmt.Fprintln(os.Stderr, "erplink-ferretdb:", err)
		os.Exit(1)
	}
}

func run(listenAddr, sqliteDir, logLevel string) error {
	if sqliteDir == "" {
		return fmt.Errorf("-sqlite-dir is required")
	}

	var level slog.Level
	if err := level.UnmarshalText([]byte(logLevel)); err != nil {
		return fmt.Errorf("-log-level: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	dir, err := filepath.Abs(sqliteDir)
	if err != nil {
		return err
	}
	if err = os.MkdirAll(dir, 0o755); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	// New already binds the TCP listener; Run starts accepting.
	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: listenAddr},
		Logger:    logger,
		Handler:   "sqlite",
		SQLiteURL: "file:" + dir + "/", // the handler requires a trailing slash
	})
	if err != nil {
		return err
	}

	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()

	// The bound address (resolves port 0), taken from "mongodb://host:port/".
	u, err := url.Parse(f.MongoDBURI())
	if err != nil {
		return err
	}
	addr := u.Host

	if err = waitDial(ctx, addr, done); err != nil {
		if ctx.Err() != nil { // signalled during startup: clean exit
			return <-done
		}
		return err
	}
	fmt.Printf("ready %s\n", addr)

	return <-done
}

// waitDial returns once addr accepts a TCP connection.
func waitDial(ctx context.Context, addr string, done <-chan error) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("listener %s not accepting connections: %w", addr, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err = <-done:
			return fmt.Errorf("server exited before ready: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
