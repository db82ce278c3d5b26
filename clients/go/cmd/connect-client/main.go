// Command connect-client calls erplink with connect-go, over the protocol
// named by -protocol: connect (HTTP/1.1, the default), grpc (HTTP/2
// cleartext) or grpcweb (HTTP/1.1). It runs the same checks as grpc-client:
// Authorize (allowed, each denial step, rate limited), systems with a bearer
// token, the BadRequest detail of a validation error, and the rate-limit
// metadata; one line per check, exit code 1 if any failed.
//
//	ERPLINK_URL=http://localhost:8080 ERPLINK_TOKEN=… ERPLINK_DATA_KEY=… \
//	ERPLINK_EXPIRED_KEY=… ERPLINK_LIMITED_KEY=… go run ./cmd/connect-client -protocol grpc
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"connectrpc.com/connect"

	adminv1 "erplink.dev/gen/go/erplink/admin/v1"
	"erplink.dev/gen/go/erplink/admin/v1/adminv1connect"
	authzv1 "erplink.dev/gen/go/erplink/authz/v1"
	"erplink.dev/gen/go/erplink/authz/v1/authzv1connect"
	errorsv1 "erplink.dev/gen/go/erplink/errors/v1"

	"erplink.dev/clients/go/internal/scenario"
)

func main() {
	protocol := flag.String("protocol", "connect", "connect, grpc or grpcweb")
	flag.Parse()
	env := scenario.FromEnv("connect-client")
	httpClient := http.DefaultClient
	var options []connect.ClientOption
	switch *protocol {
	case "connect":
	case "grpc":
		// gRPC needs HTTP/2; erplink speaks it in cleartext (h2c) with prior knowledge.
		var protocols http.Protocols
		protocols.SetUnencryptedHTTP2(true)
		httpClient = &http.Client{Transport: &http.Transport{Protocols: &protocols}}
		options = append(options, connect.WithGRPC())
	case "grpcweb":
		options = append(options, connect.WithGRPCWeb())
	default:
		fmt.Fprintf(os.Stderr, "connect-client: unknown -protocol %q (connect, grpc or grpcweb)\n", *protocol)
		os.Exit(2)
	}
	os.Exit(run(env, httpClient, options))
}

func run(env scenario.Env, httpClient connect.HTTPClient, options []connect.ClientOption) int {
	report := scenario.NewReport()
	authz := authzv1connect.NewAuthorizationServiceClient(httpClient, env.URL, options...)
	systems := adminv1connect.NewSystemServiceClient(httpClient, env.URL, options...)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// Authorize needs no credential of its own: the key to check is in the request.
	for _, c := range scenario.AuthorizeCases(env) {
		res, err := authz.Authorize(ctx, connect.NewRequest(c.Request))
		if err == nil {
			err = scenario.CheckDecision(c, res.Msg)
		}
		report.Check(c.Name, err)
	}
	report.Check("authorize denied: rate limited", func() error {
		req := &authzv1.AuthorizeRequest{ApiKey: env.LimitedKey, Instance: scenario.Instance, Service: scenario.Service,
			Entity: scenario.Entity, Operation: authzv1.Operation_OPERATION_GET}
		first, err := authz.Authorize(ctx, connect.NewRequest(req))
		if err != nil {
			return err
		}
		second, err := authz.Authorize(ctx, connect.NewRequest(req))
		if err != nil {
			return err
		}
		return scenario.CheckRateLimited(first.Msg, second.Msg)
	}())
	report.Check("authorize invalid request", func() error {
		_, err := authz.Authorize(ctx, connect.NewRequest(&authzv1.AuthorizeRequest{ApiKey: env.DataKey}))
		if connect.CodeOf(err) != connect.CodeInvalidArgument {
			return fmt.Errorf("got %v, want invalid_argument", err)
		}
		return nil
	}())
	report.Check("unknown method is unimplemented", func() error {
		// A method erplink does not serve (an older or newer client): unimplemented in every protocol.
		nope := connect.NewClient[authzv1.AuthorizeRequest, authzv1.AuthorizeResponse](
			httpClient, env.URL+"/erplink.authz.v1.AuthorizationService/NoSuchMethod", options...)
		_, err := nope.CallUnary(ctx, connect.NewRequest(&authzv1.AuthorizeRequest{}))
		if connect.CodeOf(err) != connect.CodeUnimplemented {
			return fmt.Errorf("got %v, want unimplemented", err)
		}
		return nil
	}())

	// The admin services take the bearer token in the Authorization header.
	withToken := func(req connect.AnyRequest) {
		req.Header().Set("Authorization", "Bearer "+env.Token)
	}

	report.Check("admin call without token is unauthenticated", func() error {
		_, err := systems.ListSystems(ctx, connect.NewRequest(&adminv1.ListSystemsRequest{}))
		if connect.CodeOf(err) != connect.CodeUnauthenticated {
			return fmt.Errorf("got %v, want unauthenticated", err)
		}
		return nil
	}())

	var created *adminv1.System
	report.Check("create system", func() error {
		req := connect.NewRequest(&adminv1.CreateSystemRequest{System: &adminv1.System{
			Name:        fmt.Sprintf("%s-%d", env.Name, time.Now().UnixNano()),
			Description: "created by clients/go/cmd/connect-client",
		}})
		withToken(req)
		res, err := systems.CreateSystem(ctx, req)
		if err != nil {
			return err
		}
		created = res.Msg.GetSystem()
		if !strings.HasPrefix(created.GetId(), "sys_") || created.GetCreatedAt() == nil {
			return fmt.Errorf("got %v, want an id sys_… and created_at", created)
		}
		return nil
	}())

	report.Check("list systems", func() error {
		if created == nil {
			return errors.New("no system was created")
		}
		token := ""
		for {
			req := connect.NewRequest(&adminv1.ListSystemsRequest{PageSize: 100, PageToken: token})
			withToken(req)
			res, err := systems.ListSystems(ctx, req)
			if err != nil {
				return err
			}
			for _, s := range res.Msg.GetSystems() {
				if s.GetId() == created.GetId() && s.GetName() == created.GetName() {
					return nil
				}
			}
			if token = res.Msg.GetNextPageToken(); token == "" {
				return fmt.Errorf("%s is not listed", created.GetId())
			}
		}
	}())

	report.Check("validation error carries a BadRequest detail", func() error {
		req := connect.NewRequest(&adminv1.CreateSystemRequest{System: &adminv1.System{Name: ""}})
		withToken(req)
		_, err := systems.CreateSystem(ctx, req)
		var connectErr *connect.Error
		if !errors.As(err, &connectErr) || connectErr.Code() != connect.CodeInvalidArgument {
			return fmt.Errorf("got %v, want invalid_argument", err)
		}
		// Value() decodes a detail with the types linked into the program:
		// importing errorsv1 registers erplink.errors.v1.BadRequest.
		for _, detail := range connectErr.Details() {
			value, err := detail.Value()
			if err != nil {
				return err
			}
			if br, ok := value.(*errorsv1.BadRequest); ok {
				for _, v := range br.GetFieldViolations() {
					if v.GetField() == "name" && v.GetDescription() == "is required" {
						return nil
					}
				}
				return fmt.Errorf("BadRequest %v has no violation name: is required", br)
			}
		}
		return fmt.Errorf("no BadRequest among %d details", len(connectErr.Details()))
	}())

	report.Check("rate-limit metadata", func() error {
		var got []scenario.RateLimitHeaders
		for range 2 {
			req := connect.NewRequest(&adminv1.ListSystemsRequest{PageSize: 1})
			withToken(req)
			res, err := systems.ListSystems(ctx, req)
			if err != nil {
				return err
			}
			h, err := scenario.ParseRateLimit(res.Header().Get)
			if err != nil {
				return err
			}
			got = append(got, h)
		}
		// Each call takes one from the budget (unless a window rolled over between them).
		if got[0].Reset == got[1].Reset && got[1].Remaining != got[0].Remaining-1 {
			return fmt.Errorf("remaining %d then %d, want one less", got[0].Remaining, got[1].Remaining)
		}
		return nil
	}())

	report.Check("rate-limit metadata on an error", func() error {
		req := connect.NewRequest(&adminv1.GetSystemRequest{Id: "sys_00000000000000000000000000"})
		withToken(req)
		_, err := systems.GetSystem(ctx, req)
		var connectErr *connect.Error
		if !errors.As(err, &connectErr) || connectErr.Code() != connect.CodeNotFound {
			return fmt.Errorf("got %v, want not_found", err)
		}
		// Meta() holds the error's headers and trailers, whatever the protocol.
		_, err = scenario.ParseRateLimit(connectErr.Meta().Get)
		return err
	}())

	return report.Done()
}
