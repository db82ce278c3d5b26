// Package scenario holds what the Go client programs share: the settings they
// read from the environment, the names the data key is granted, the table of
// Authorize cases, and the report they print (one line per check).
package scenario

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	authzv1 "erplink.dev/gen/go/erplink/authz/v1"
)

// What ERPLINK_DATA_KEY must be granted: `get` on this entity set, and nothing
// else (the suite in test-external creates it so).
const (
	Instance = "s4-prod"
	Service  = "API_BUSINESS_PARTNER"
	Entity   = "A_BusinessPartner"
)

// Env is the programs' configuration, from environment variables.
type Env struct {
	// URL is erplink's base URL (ERPLINK_URL, default http://localhost:8080).
	URL string
	// Target is URL's host:port, as grpc-go dials it.
	Target string
	// Token is an admin bearer token: the master key or an admin key (ERPLINK_TOKEN).
	Token string
	// DataKey is a data key granted only `get` on Instance/Service/Entity (ERPLINK_DATA_KEY).
	DataKey string
	// ExpiredKey is a data key whose expires_at has passed (ERPLINK_EXPIRED_KEY).
	ExpiredKey string
	// LimitedKey is an unused data key with the same grant and rate_limits
	// {per_minute: 1, per_day: 1} (ERPLINK_LIMITED_KEY).
	LimitedKey string
	// Name prefixes the system the program creates (ERPLINK_CLIENT_NAME, default the program's name).
	Name string
}

// FromEnv reads Env; a missing variable ends the program with exit code 2.
func FromEnv(program string) Env {
	get := func(name, fallback string) string {
		if v := os.Getenv(name); v != "" {
			return v
		}
		if fallback == "" {
			fmt.Fprintf(os.Stderr, "%s: set %s (see clients/README.md)\n", program, name)
			os.Exit(2)
		}
		return fallback
	}
	e := Env{
		URL:        strings.TrimRight(get("ERPLINK_URL", "http://localhost:8080"), "/"),
		Token:      get("ERPLINK_TOKEN", ""),
		DataKey:    get("ERPLINK_DATA_KEY", ""),
		ExpiredKey: get("ERPLINK_EXPIRED_KEY", ""),
		LimitedKey: get("ERPLINK_LIMITED_KEY", ""),
		Name:       get("ERPLINK_CLIENT_NAME", program),
	}
	e.Target = strings.TrimPrefix(strings.TrimPrefix(e.URL, "http://"), "https://")
	return e
}

// AuthorizeCase is one Authorize call and the decision it must get.
type AuthorizeCase struct {
	// Name is the check's name.
	Name string
	// Request is what is sent.
	Request *authzv1.AuthorizeRequest
	// Step is the expected denial step (DENIAL_STEP_UNSPECIFIED: allowed).
	Step authzv1.DenialStep
	// Code is the expected error code of the denial (`UNAUTHORIZED`, `FORBIDDEN`, `RATE_LIMITED`).
	Code string
}

// AuthorizeCases is the table every client runs: allowed, then each denial
// step in the order erplink checks them. The rate-limit case is separate
// (it needs two calls).
func AuthorizeCases(e Env) []AuthorizeCase {
	req := func(key, instance, service, entity string, op authzv1.Operation) *authzv1.AuthorizeRequest {
		return &authzv1.AuthorizeRequest{ApiKey: key, Instance: instance, Service: service, Entity: entity, Operation: op}
	}
	get := authzv1.Operation_OPERATION_GET
	return []AuthorizeCase{
		{"authorize allowed", req(e.DataKey, Instance, Service, Entity, get), authzv1.DenialStep_DENIAL_STEP_UNSPECIFIED, ""},
		{"authorize denied: key invalid", req("erpl_not_a_key", Instance, Service, Entity, get), authzv1.DenialStep_DENIAL_STEP_KEY_INVALID, "UNAUTHORIZED"},
		{"authorize denied: key expired", req(e.ExpiredKey, Instance, Service, Entity, get), authzv1.DenialStep_DENIAL_STEP_KEY_EXPIRED, "UNAUTHORIZED"},
		{"authorize denied: instance", req(e.DataKey, "s4-dev", Service, Entity, get), authzv1.DenialStep_DENIAL_STEP_INSTANCE, "FORBIDDEN"},
		{"authorize denied: service", req(e.DataKey, Instance, "API_SALES_ORDER_SRV", Entity, get), authzv1.DenialStep_DENIAL_STEP_SERVICE, "FORBIDDEN"},
		{"authorize denied: entity", req(e.DataKey, Instance, Service, "A_Customer", get), authzv1.DenialStep_DENIAL_STEP_ENTITY, "FORBIDDEN"},
		{"authorize denied: operation", req(e.DataKey, Instance, Service, Entity, authzv1.Operation_OPERATION_DELETE), authzv1.DenialStep_DENIAL_STEP_OPERATION, "FORBIDDEN"},
	}
}

// CheckDecision compares an Authorize response with the expected decision.
func CheckDecision(c AuthorizeCase, res *authzv1.AuthorizeResponse) error {
	if c.Step == authzv1.DenialStep_DENIAL_STEP_UNSPECIFIED {
		if !res.GetAllowed() {
			return fmt.Errorf("denied (%s, %s: %s), want allowed", res.GetDenialStep(), res.GetCode(), res.GetMessage())
		}
		if !strings.HasPrefix(res.GetKeyId(), "key_") {
			return fmt.Errorf("key_id %q, want key_…", res.GetKeyId())
		}
		rl := res.GetRateLimit()
		if rl.GetLimit() <= 0 || rl.GetRemaining() >= rl.GetLimit() || len(rl.GetWindows()) != 2 {
			return fmt.Errorf("rate_limit %v, want limit > remaining and two windows", rl)
		}
		return nil
	}
	if res.GetAllowed() || res.GetDenialStep() != c.Step || res.GetCode() != c.Code || res.GetMessage() == "" {
		return fmt.Errorf("got allowed=%v %s %s %q, want %s %s", res.GetAllowed(), res.GetDenialStep(), res.GetCode(), res.GetMessage(), c.Step, c.Code)
	}
	return nil
}

// CheckRateLimited checks the second call of the limited key: denied for the
// rate limit, nothing remaining, and a Retry-After.
func CheckRateLimited(first, second *authzv1.AuthorizeResponse) error {
	if !first.GetAllowed() {
		return fmt.Errorf("first call denied (%s: %s), want allowed", first.GetDenialStep(), first.GetMessage())
	}
	if second.GetAllowed() || second.GetDenialStep() != authzv1.DenialStep_DENIAL_STEP_RATE_LIMITED || second.GetCode() != "RATE_LIMITED" {
		return fmt.Errorf("second call: allowed=%v %s %s, want DENIAL_STEP_RATE_LIMITED RATE_LIMITED", second.GetAllowed(), second.GetDenialStep(), second.GetCode())
	}
	rl := second.GetRateLimit()
	if rl.GetRemaining() != 0 || rl.GetRetryAfter().AsDuration() <= 0 {
		return fmt.Errorf("rate_limit %v, want remaining 0 and a retry_after", rl)
	}
	return nil
}

// RateLimitHeaders are the admin rate-limit fields of a response's metadata.
type RateLimitHeaders struct {
	Limit, Remaining, Reset int64
	Policy                  string
}

// ParseRateLimit reads the rate-limit metadata (get returns the first value of a key, or "").
func ParseRateLimit(get func(string) string) (RateLimitHeaders, error) {
	var h RateLimitHeaders
	var err error
	num := func(name string) int64 {
		v, e := strconv.ParseInt(get(name), 10, 64)
		if e != nil && err == nil {
			err = fmt.Errorf("%s: %q is not a number", name, get(name))
		}
		return v
	}
	h.Limit, h.Remaining, h.Reset = num("x-ratelimit-limit"), num("x-ratelimit-remaining"), num("x-ratelimit-reset")
	h.Policy = get("ratelimit-policy")
	if err != nil {
		return h, err
	}
	now := time.Now().Unix()
	switch {
	case h.Limit <= 0 || h.Remaining < 0 || h.Remaining >= h.Limit:
		return h, fmt.Errorf("limit %d, remaining %d: want 0 <= remaining < limit", h.Limit, h.Remaining)
	case h.Reset < now || h.Reset > now+86400:
		return h, fmt.Errorf("reset %d is not within the next day", h.Reset)
	case !strings.Contains(h.Policy, `"minute";q=`) || !strings.Contains(h.Policy, `"day";q=`):
		return h, fmt.Errorf("ratelimit-policy %q names no minute and day windows", h.Policy)
	}
	return h, nil
}

// Report prints one line per check: `ok - <name>` or `not ok - <name>: <why>`.
type Report struct {
	out            io.Writer
	checks, failed int
}

// NewReport writes to stdout.
func NewReport() *Report { return &Report{out: os.Stdout} }

// Check records one check: passed when err is nil.
func (r *Report) Check(name string, err error) {
	r.checks++
	if err == nil {
		fmt.Fprintf(r.out, "ok - %s\n", name)
		return
	}
	r.failed++
	fmt.Fprintf(r.out, "not ok - %s: %s\n", name, strings.Join(strings.Fields(err.Error()), " "))
}

// Done prints the totals and returns the exit code: 1 if a check failed.
func (r *Report) Done() int {
	fmt.Fprintf(r.out, "done: %d checks, %d failed\n", r.checks, r.failed)
	if r.failed > 0 {
		return 1
	}
	return 0
}
